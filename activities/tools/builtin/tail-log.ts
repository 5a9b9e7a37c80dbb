/**
 * `bash`'s full-output log with a cap (issue 33 item 4): a command printing 1 GiB wrote a 1 GiB log in the worker's
 * directories, outside every limit of the sandbox. The log keeps at most `maxBytes`: up to the cap it is written as
 * it comes; beyond it the file is a ring (each byte written at its offset modulo the cap), and {@link TailLog.close}
 * puts the last `maxBytes` in order behind a header line saying how much came before:
 * `[The first <n> bytes of the output are not kept: this file holds its last <cap> bytes]`.
 */
import { open, rename, type FileHandle } from 'node:fs/promises';

/** Default cap of a full-output log: 64 MiB. */
export const DEFAULT_OUTPUT_LOG_BYTES = 64 * 1024 * 1024;

/** The first line of a log that was cut: `dropped` bytes came before what it holds. */
export function droppedHeader(dropped: number, kept: number): string {
  return `[The first ${dropped} bytes of the output are not kept: this file holds its last ${kept} bytes]\n`;
}

/** An append-only log file (0600, created exclusively) that keeps the last `maxBytes` written to it. */
export class TailLog {
  private handle: Promise<FileHandle>;
  private chain: Promise<unknown> = Promise.resolve();
  private written = 0;
  private failed: Error | undefined;

  constructor(
    readonly path: string,
    readonly maxBytes: number = DEFAULT_OUTPUT_LOG_BYTES,
  ) {
    this.handle = open(path, 'wx', 0o600);
    this.handle.catch((error: Error) => (this.failed = error));
  }

  /** Bytes appended so far (kept or not). */
  get total(): number {
    return this.written;
  }

  /** Whether earlier output was dropped to stay within the cap. */
  get capped(): boolean {
    return this.written > this.maxBytes;
  }

  /** Appends `data` (written in order, in the background). */
  append(data: Buffer): void {
    const start = this.written;
    this.written += data.length;
    // Only the last maxBytes of data can matter; each piece lands at its offset modulo the cap.
    const skip = Math.max(0, data.length - this.maxBytes);
    for (let offset = skip; offset < data.length;) {
      const position = (start + offset) % this.maxBytes;
      const length = Math.min(data.length - offset, this.maxBytes - position);
      const piece = data.subarray(offset, offset + length);
      this.chain = this.chain.then(async () => {
        if (this.failed) return;
        const h = await this.handle;
        await h.write(piece, 0, piece.length, position).catch((error: Error) => (this.failed = error));
      });
      offset += length;
    }
  }

  private closing: Promise<void> | undefined;

  /** Waits for every write; a capped log is then rewritten in order behind its header. Once; later calls wait too. */
  close(): Promise<void> {
    this.closing ??= this.finish();
    return this.closing;
  }

  private async finish(): Promise<void> {
    await this.chain;
    if (this.failed) return;
    const h = await this.handle;
    await h.close();
    if (this.capped) await this.unroll();
  }

  /** Rewrites the ring (oldest byte at `total % maxBytes`) in order, behind {@link droppedHeader}, in 1 MiB steps. */
  private async unroll(): Promise<void> {
    const cap = this.maxBytes;
    const from = this.written % cap;
    const tmp = `${this.path}.tmp`;
    const src = await open(this.path, 'r');
    try {
      const dst = await open(tmp, 'wx', 0o600);
      try {
        await dst.write(droppedHeader(this.written - cap, cap));
        const buffer = Buffer.allocUnsafe(Math.min(cap, 1024 * 1024));
        for (const [a, b] of [
          [from, cap],
          [0, from],
        ]) {
          for (let p = a; p < b;) {
            const { bytesRead } = await src.read(buffer, 0, Math.min(buffer.length, b - p), p);
            if (bytesRead === 0) break;
            await dst.write(buffer, 0, bytesRead);
            p += bytesRead;
          }
        }
      } finally {
        await dst.close();
      }
    } finally {
      await src.close();
    }
    await rename(tmp, this.path);
  }
}
