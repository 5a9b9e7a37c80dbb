/**
 * Image support for `read`: detection by magic bytes (jpg, png, gif, webp, bmp) and BMP → PNG conversion with a small
 * hand-written BMP decoder and PNG encoder (node:zlib only). Resizing is not implemented (no image library).
 */
import { crc32, deflateSync } from 'node:zlib';

export type ImageMime = 'image/jpeg' | 'image/png' | 'image/gif' | 'image/webp' | 'image/bmp';

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const BMP_DIB_HEADER_SIZES = new Set([12, 16, 40, 52, 56, 64, 108, 124]);

/** The image type of `buf` from its first bytes, or undefined when it is not a supported image. */
export function detectImageMime(buf: Uint8Array): ImageMime | undefined {
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'image/jpeg';
  if (b.length >= 8 && b.subarray(0, 8).equals(PNG_SIGNATURE)) return 'image/png';
  if (b.length >= 6 && (b.toString('latin1', 0, 6) === 'GIF87a' || b.toString('latin1', 0, 6) === 'GIF89a'))
    return 'image/gif';
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP')
    return 'image/webp';
  // "BM" alone would catch text files starting with "BM"; also require a known DIB header size.
  if (b.length >= 26 && b[0] === 0x42 && b[1] === 0x4d && BMP_DIB_HEADER_SIZES.has(b.readUInt32LE(14)))
    return 'image/bmp';
  return undefined;
}

export interface RawImage {
  width: number;
  height: number;
  /** 3 (RGB) or 4 (RGBA) bytes per pixel, rows top to bottom. */
  channels: 3 | 4;
  pixels: Buffer;
}

const MAX_PIXELS = 100_000_000;

/** Decodes an uncompressed BMP (1/4/8/16/24/32 bit, BI_RGB or BI_BITFIELDS). Throws a readable Error otherwise. */
export function decodeBmp(buf: Buffer): RawImage {
  if (buf.length < 26 || buf[0] !== 0x42 || buf[1] !== 0x4d) throw new Error('Not a BMP file');
  const pixelOffset = buf.readUInt32LE(10);
  const headerSize = buf.readUInt32LE(14);
  let width: number;
  let height: number;
  let bpp: number;
  let compression = 0;
  let paletteSize = 0;
  let paletteEntryBytes = 4;
  if (headerSize === 12) {
    width = buf.readUInt16LE(18);
    height = buf.readInt16LE(20);
    bpp = buf.readUInt16LE(24);
    paletteEntryBytes = 3;
  } else {
    if (buf.length < 14 + 40) throw new Error('Truncated BMP header');
    width = buf.readInt32LE(18);
    height = buf.readInt32LE(22);
    bpp = buf.readUInt16LE(28);
    compression = buf.readUInt32LE(30);
    paletteSize = buf.readUInt32LE(46);
  }
  const topDown = height < 0;
  height = Math.abs(height);
  if (width <= 0 || height <= 0) throw new Error(`Invalid BMP dimensions ${width}x${height}`);
  if (width * height > MAX_PIXELS) throw new Error(`BMP too large (${width}x${height})`);
  if (compression !== 0 && compression !== 3) throw new Error(`Unsupported BMP compression ${compression}`);
  if (![1, 4, 8, 16, 24, 32].includes(bpp)) throw new Error(`Unsupported BMP bit depth ${bpp}`);

  // Channel masks for 16/32-bit images.
  let masks: [number, number, number, number] | undefined;
  if (bpp === 16 || bpp === 32) {
    if (compression === 3) {
      const at = headerSize >= 52 ? 14 + 40 : 14 + headerSize;
      if (buf.length < at + 12) throw new Error('Truncated BMP bit masks');
      const alpha = headerSize >= 56 && buf.length >= at + 16 ? buf.readUInt32LE(at + 12) : 0;
      masks = [buf.readUInt32LE(at), buf.readUInt32LE(at + 4), buf.readUInt32LE(at + 8), alpha];
    } else {
      masks = bpp === 16 ? [0x7c00, 0x03e0, 0x001f, 0] : [0x00ff0000, 0x0000ff00, 0x000000ff, 0];
    }
  }
  const palette: number[][] = [];
  if (bpp <= 8) {
    const count = paletteSize || 1 << bpp;
    const at = 14 + headerSize;
    for (let i = 0; i < count; i++) {
      const o = at + i * paletteEntryBytes;
      if (o + 3 > buf.length) throw new Error('Truncated BMP palette');
      palette.push([buf[o + 2], buf[o + 1], buf[o]]);
    }
  }

  const channels: 3 | 4 = masks && masks[3] ? 4 : 3;
  const rowSize = Math.floor((bpp * width + 31) / 32) * 4;
  if (pixelOffset + rowSize * height > buf.length) throw new Error('Truncated BMP pixel data');
  const pixels = Buffer.alloc(width * height * channels);
  const extract = (value: number, mask: number): number => {
    if (!mask) return 255;
    let shift = 0;
    while (((mask >>> shift) & 1) === 0) shift++;
    const max = mask >>> shift;
    return Math.round((((value & mask) >>> shift) * 255) / max);
  };
  for (let y = 0; y < height; y++) {
    const srcRow = pixelOffset + (topDown ? y : height - 1 - y) * rowSize;
    for (let x = 0; x < width; x++) {
      let r: number;
      let g: number;
      let b: number;
      let a = 255;
      if (bpp === 24) {
        const o = srcRow + x * 3;
        [b, g, r] = [buf[o], buf[o + 1], buf[o + 2]];
      } else if (bpp === 32 || bpp === 16) {
        const v = bpp === 32 ? buf.readUInt32LE(srcRow + x * 4) : buf.readUInt16LE(srcRow + x * 2);
        const m = masks!;
        [r, g, b] = [extract(v, m[0]), extract(v, m[1]), extract(v, m[2])];
        if (m[3]) a = extract(v, m[3]);
      } else {
        const bitIndex = x * bpp;
        const byte = buf[srcRow + (bitIndex >> 3)];
        const index = (byte >> (8 - bpp - (bitIndex & 7))) & ((1 << bpp) - 1);
        const entry = palette[index];
        if (!entry) throw new Error(`BMP palette index ${index} out of range`);
        [r, g, b] = entry;
      }
      const d = (y * width + x) * channels;
      pixels[d] = r;
      pixels[d + 1] = g;
      pixels[d + 2] = b;
      if (channels === 4) pixels[d + 3] = a;
    }
  }
  return { width, height, channels, pixels };
}

function pngChunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const typeAndData = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(typeAndData)); // zlib.crc32: the CRC-32 PNG chunks use
  return Buffer.concat([length, typeAndData, crc]);
}

/** Encodes 8-bit RGB/RGBA pixels as a PNG (filter 0 on every row). */
export function encodePng(image: RawImage): Buffer {
  const { width, height, channels, pixels } = image;
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(width, 0);
  ihdr.writeUInt32BE(height, 4);
  ihdr[8] = 8;
  ihdr[9] = channels === 4 ? 6 : 2;
  const stride = width * channels;
  const raw = Buffer.alloc((stride + 1) * height);
  for (let y = 0; y < height; y++) pixels.copy(raw, y * (stride + 1) + 1, y * stride, (y + 1) * stride);
  return Buffer.concat([
    PNG_SIGNATURE,
    pngChunk('IHDR', ihdr),
    pngChunk('IDAT', deflateSync(raw)),
    pngChunk('IEND', Buffer.alloc(0)),
  ]);
}

export interface ProcessedImage {
  data: string;
  mimeType: string;
  /** Extra lines for the text block, e.g. `[Image converted from image/bmp to image/png.]`. */
  hints: string[];
}

/** Prepares an image for the model: BMP is converted to PNG; the other formats pass through. Throws on failure. */
export function processImage(buf: Buffer, mimeType: ImageMime): ProcessedImage {
  if (mimeType === 'image/bmp') {
    const png = encodePng(decodeBmp(buf));
    return {
      data: png.toString('base64'),
      mimeType: 'image/png',
      hints: ['[Image converted from image/bmp to image/png.]'],
    };
  }
  return { data: buf.toString('base64'), mimeType, hints: [] };
}
