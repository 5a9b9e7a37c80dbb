import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import type { ReadToolDetails } from '../../../activities/tools/builtin/read.js';
import { errorOf, run, tempDir, text, tools } from './helpers.js';

const lines = (n: number, f: (i: number) => string = (i) => `Line ${i}`) =>
  Array.from({ length: n }, (_, i) => f(i + 1)).join('\n');

// 1×1 PNG (a red pixel).
const PNG_1X1 = Buffer.from(
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==',
  'base64',
);

/** A 1×1 24-bit BMP with one blue pixel. */
function bmp1x1(): Buffer {
  const buf = Buffer.alloc(14 + 40 + 4);
  buf.write('BM', 0, 'latin1');
  buf.writeUInt32LE(buf.length, 2);
  buf.writeUInt32LE(54, 10);
  buf.writeUInt32LE(40, 14);
  buf.writeInt32LE(1, 18);
  buf.writeInt32LE(1, 22);
  buf.writeUInt16LE(1, 26);
  buf.writeUInt16LE(24, 28);
  buf.writeUInt32LE(0, 30);
  buf.writeUInt32LE(4, 34);
  buf[54] = 0xff; // B
  buf[55] = 0x00; // G
  buf[56] = 0x00; // R
  return buf;
}

describe('read (C.1)', () => {
  it('C.8-1 reads a small file verbatim without notice or details', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'test.txt');
    writeFileSync(file, 'Hello, world!\nLine 2\nLine 3');
    const result = await run(tools(dir).read, { path: file });
    expect(text(result)).toBe('Hello, world!\nLine 2\nLine 3');
    expect(text(result)).not.toContain('Use offset=');
    expect(result.details).toBeUndefined();
  });

  it('C.8-2 missing file rejects with ENOENT', async () => {
    const dir = tempDir();
    await expect(run(tools(dir).read, { path: path.join(dir, 'nope.txt') })).rejects.toThrow(/ENOENT|not found/i);
  });

  it('C.8-3 truncates at 2000 lines with the exact notice', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'large.txt');
    writeFileSync(file, lines(2500));
    const out = text(await run(tools(dir).read, { path: file }));
    expect(out).toContain('Line 1\n');
    expect(out).toContain('Line 2000');
    expect(out).not.toContain('Line 2001');
    expect(out.endsWith('Line 2000\n\n[Showing lines 1-2000 of 2500. Use offset=2001 to continue.]')).toBe(true);
  });

  it('C.8-4 truncates at 50KB with the byte notice', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'wide.txt');
    writeFileSync(
      file,
      lines(500, (i) => `Line ${i}: ${'x'.repeat(200)}`),
    );
    const out = text(await run(tools(dir).read, { path: file }));
    const m = /\[Showing lines 1-(\d+) of 500 \((.+?) limit\)\. Use offset=(\d+) to continue\.\]$/.exec(out);
    expect(m).not.toBeNull();
    expect(m![2]).toBe('50.0KB');
    expect(Number(m![3])).toBe(Number(m![1]) + 1);
    // Whole lines only, within 51200 bytes.
    const body = out.slice(0, out.lastIndexOf('\n\n['));
    expect(Buffer.byteLength(body)).toBeLessThanOrEqual(51200);
    expect(body.split('\n')).toHaveLength(Number(m![1]));
  });

  it('C.8-5 offset starts at the given 1-based line', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'f.txt');
    writeFileSync(file, lines(100));
    const out = text(await run(tools(dir).read, { path: file, offset: 51 }));
    expect(out).toContain('Line 51');
    expect(out).toContain('Line 100');
    expect(out).not.toContain('Line 50\n');
    expect(out).not.toContain('Use offset=');
  });

  it('C.8-6 limit stops early with the remaining-lines notice', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'f.txt');
    writeFileSync(file, lines(100));
    const out = text(await run(tools(dir).read, { path: file, limit: 10 }));
    expect(out).toBe(`${lines(10)}\n\n[90 more lines in file. Use offset=11 to continue.]`);
    expect(out).not.toContain('Line 11');
  });

  it('C.8-7 offset and limit together', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'f.txt');
    writeFileSync(file, lines(100));
    const out = text(await run(tools(dir).read, { path: file, offset: 41, limit: 20 }));
    expect(out).toBe(
      `${lines(60).split('\n').slice(40).join('\n')}\n\n[40 more lines in file. Use offset=61 to continue.]`,
    );
    expect(out).not.toContain('Line 40\n');
    expect(out).not.toContain('Line 61\n');
  });

  it('C.8-8 offset beyond the end rejects', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'f.txt');
    writeFileSync(file, 'a\nb\nc');
    expect(await errorOf(run(tools(dir).read, { path: file, offset: 100 }))).toBe(
      'Offset 100 is beyond end of file (3 lines total)',
    );
  });

  it('C.8-9 details carry the truncation record', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'f.txt');
    writeFileSync(file, lines(2500));
    const result = await run<ReadToolDetails | undefined>(tools(dir).read, { path: file });
    expect(result.details?.truncation).toMatchObject({
      truncated: true,
      truncatedBy: 'lines',
      totalLines: 2500,
      outputLines: 2000,
      maxLines: 2000,
      maxBytes: 51200,
    });
  });

  it('C.8-10 detects a PNG by magic bytes regardless of extension', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'image.txt');
    writeFileSync(file, PNG_1X1);
    const result = await run(tools(dir).read, { path: file });
    expect(result.content?.[0]).toMatchObject({ type: 'text' });
    expect(text(result)).toContain('Read image file [image/png]');
    const image = result.content?.find((c) => c.type === 'image');
    expect(image).toMatchObject({ type: 'image', mimeType: 'image/png' });
    expect(image && image.type === 'image' && image.data.length > 0).toBe(true);
  });

  it('C.8-11 converts a BMP to PNG', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'image.bmp');
    writeFileSync(file, bmp1x1());
    const result = await run(tools(dir).read, { path: file });
    expect(text(result)).toBe('Read image file [image/png]\n[Image converted from image/bmp to image/png.]');
    const image = result.content?.find((c) => c.type === 'image');
    expect(image?.type === 'image' && image.mimeType).toBe('image/png');
    const png = Buffer.from(image?.type === 'image' ? image.data : '', 'base64');
    expect(png[0]).toBe(0x89);
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    // IHDR: 1×1, 8-bit RGB.
    expect(png.readUInt32BE(16)).toBe(1);
    expect(png.readUInt32BE(20)).toBe(1);
    expect(png[25]).toBe(2);
    // The pixel survives: inflate IDAT and check filter byte + RGB.
    const { inflateSync } = await import('node:zlib');
    const idatLength = png.readUInt32BE(33);
    expect(png.subarray(37, 41).toString('latin1')).toBe('IDAT');
    expect([...inflateSync(png.subarray(41, 41 + idatLength))]).toEqual([0, 0, 0, 255]);
  });

  it('C.8-12 a .png file containing text is read as text', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'not-an-image.png');
    writeFileSync(file, 'just some text');
    const result = await run(tools(dir).read, { path: file });
    expect(text(result)).toBe('just some text');
    expect(result.content?.some((c) => c.type === 'image')).toBe(false);
  });

  it('first line over 50KB gives the sed hint', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'long.txt');
    writeFileSync(file, `short\n${'y'.repeat(60 * 1024)}\nafter`);
    const result = await run<ReadToolDetails | undefined>(tools(dir).read, { path: file, offset: 2 });
    expect(text(result)).toBe(
      `[Line 2 is 60.0KB, exceeds 50.0KB limit. Use bash: sed -n '2p' ${file} | head -c 51200]`,
    );
    expect(result.details?.truncation?.firstLineExceedsLimit).toBe(true);
  });

  it('falls back to the U+202F AM/PM and curly-apostrophe variants of a missing name', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'Screenshot 2024-01-01 at 10.00.00\u202FAM.png'), 'shot');
    writeFileSync(path.join(dir, 'Bob\u2019s notes.txt'), 'notes');
    expect(text(await run(tools(dir).read, { path: 'Screenshot 2024-01-01 at 10.00.00 AM.png' }))).toBe('shot');
    expect(text(await run(tools(dir).read, { path: "Bob's notes.txt" }))).toBe('notes');
  });

  it('accepts @-prefixed and Unicode-space paths inside the workspace', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'my file.txt'), 'spaced');
    expect(text(await run(tools(dir).read, { path: '@my\u00A0file.txt' }))).toBe('spaced');
  });

  it('rejects with Operation aborted when already aborted', async () => {
    const dir = tempDir();
    writeFileSync(path.join(dir, 'a.txt'), 'a');
    const ac = new AbortController();
    ac.abort();
    expect(await errorOf(run(tools(dir).read, { path: 'a.txt' }, { signal: ac.signal }))).toBe('Operation aborted');
  });

  it('says when the model cannot see images', async () => {
    const { createReadTool } = await import('../../../activities/tools/builtin/read.js');
    const { Workspace } = await import('../../../activities/tools/builtin/paths.js');
    const dir = tempDir();
    writeFileSync(path.join(dir, 'i.png'), PNG_1X1);
    const tool = createReadTool({ workspace: new Workspace(dir), modelSupportsImages: false });
    expect(text(await run(tool, { path: 'i.png' }))).toBe(
      'Read image file [image/png]\n[Current model does not support images. The image will be omitted from this request.]',
    );
  });

  it('an undecodable BMP yields text only with the reason', async () => {
    const dir = tempDir();
    const bad = bmp1x1();
    bad.writeUInt32LE(1, 30); // RLE8 compression: unsupported
    writeFileSync(path.join(dir, 'bad.bmp'), bad);
    const result = await run(tools(dir).read, { path: 'bad.bmp' });
    expect(result.content).toEqual([
      { type: 'text', text: 'Read image file [image/bmp]\nUnsupported BMP compression 1' },
    ]);
  });
});
