/**
 * `read`'s window of a text file, streamed (issue 33 item 4): the file is read in chunks and only the lines of the
 * window are kept — at most a little more than the output limit (2000 lines / 50 KB), however long the file or its
 * lines — while every line is counted for the notices (`of <n> lines total`, `<n> more lines in file`). A 900 MiB file
 * read with `limit: 1` costs one chunk of memory, not 900 MiB.
 */
import type { FileHandle } from 'node:fs/promises';
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES } from './truncate.js';

const CHUNK_BYTES = 1024 * 1024;
/** Lines and bytes kept beyond the output limit, so that truncating what is kept decides as the whole window would. */
const KEEP_LINES = DEFAULT_MAX_LINES + 2;
const KEEP_BYTES = DEFAULT_MAX_BYTES + 2;

/** What {@link readWindow} found. */
export interface LineWindow {
  /** Lines in the file, as `text.split('\n').length` counts them (a trailing newline starts an empty last line). */
  totalLines: number;
  /** The window's text as far as it was kept: the whole window when it fits the output limit with room to spare. */
  kept: string;
  /** Whether {@link kept} is the whole window. */
  complete: boolean;
  /** Lines in the window (`splitLines` of its text) and its UTF-8 bytes (joined by `\n`). */
  windowLines: number;
  windowBytes: number;
  /** Bytes of the window's first line. */
  firstLineBytes: number;
}

/**
 * Streams `handle` from its start; the window is lines `start` (0-based) to `end` (exclusive; undefined: to the end).
 * `onChunk` runs between chunks (an abort check).
 */
export async function readWindow(
  handle: FileHandle,
  start: number,
  end: number | undefined,
  onChunk: () => void,
): Promise<LineWindow> {
  const buffer = Buffer.allocUnsafe(CHUNK_BYTES);
  const parts: Buffer[] = [];
  let keptBytes = 0;
  let keptLines = 0;
  let line = 0;
  let lineBytes = 0;
  let windowLines = 0;
  let windowBytes = 0;
  let firstLineBytes = 0;
  let complete = true;
  let lastWindowLineEmpty = false;
  const inWindow = () => line >= start && (end === undefined || line < end);
  const keep = (bytes: Buffer) => {
    if (!complete) return;
    if (keptLines > KEEP_LINES || keptBytes > KEEP_BYTES) {
      complete = false;
      return;
    }
    const room = KEEP_BYTES + 1 - keptBytes;
    const piece = bytes.length > room ? bytes.subarray(0, room) : bytes;
    parts.push(Buffer.from(piece));
    keptBytes += piece.length;
    if (piece.length < bytes.length) complete = false;
  };
  /** Ends the current line; `another`: a line follows it (a newline was read). */
  const endLine = (another: boolean) => {
    if (inWindow()) {
      windowLines++;
      windowBytes += lineBytes + (windowLines > 1 ? 1 : 0);
      if (windowLines === 1) firstLineBytes = lineBytes;
      lastWindowLineEmpty = lineBytes === 0;
    }
    line++;
    lineBytes = 0;
    if (another && inWindow() && windowLines > 0) {
      keep(Buffer.from('\n'));
      keptLines++;
    }
  };
  for (;;) {
    const { bytesRead } = await handle.read(buffer, 0, CHUNK_BYTES, null);
    if (bytesRead === 0) break;
    onChunk();
    let from = 0;
    while (from < bytesRead) {
      const nl = buffer.indexOf(10, from);
      const to = nl === -1 || nl >= bytesRead ? bytesRead : nl;
      if (inWindow()) keep(buffer.subarray(from, to));
      lineBytes += to - from;
      if (to === bytesRead) break;
      endLine(true);
      from = to + 1;
    }
  }
  endLine(false); // the last line (empty after a trailing newline)
  const totalLines = line;
  // splitLines: an empty last line (the window's text ends with a newline) is not a line of its own.
  if (windowLines > 0 && lastWindowLineEmpty) windowLines--;
  return {
    totalLines,
    kept: Buffer.concat(parts).toString('utf-8'),
    complete,
    windowLines,
    windowBytes,
    firstLineBytes,
  };
}
