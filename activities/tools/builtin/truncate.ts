/**
 * Output truncation shared by the built-in tools (Pi reference §C.0).
 *
 * Two independent limits, whichever is hit first: 2000 lines and 50 KB (51200 UTF-8 bytes). Head truncation (read, grep,
 * find, ls) keeps whole lines from the start; tail truncation (bash) keeps whole lines from the end and, only when the
 * last line alone is too big, the last bytes of that line.
 */

export const DEFAULT_MAX_LINES = 2000;
export const DEFAULT_MAX_BYTES = 50 * 1024;
/** grep cuts every output line to this many characters. */
export const GREP_MAX_LINE_LENGTH = 500;

export interface TruncationResult {
  content: string;
  truncated: boolean;
  truncatedBy: 'lines' | 'bytes' | null;
  totalLines: number;
  totalBytes: number;
  outputLines: number;
  outputBytes: number;
  lastLinePartial: boolean;
  firstLineExceedsLimit: boolean;
  maxLines: number;
  maxBytes: number;
}

export interface TruncationOptions {
  maxLines?: number;
  maxBytes?: number;
}

/** `<1024` → `"<n>B"`, below 1 MiB one-decimal KB, else one-decimal MB. */
export function formatSize(bytes: number): string {
  if (bytes < 1024) return `${bytes}B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)}KB`;
  return `${(bytes / (1024 * 1024)).toFixed(1)}MB`;
}

export function byteLength(text: string): number {
  return Buffer.byteLength(text, 'utf-8');
}

/** The lines of `text`: empty text has none, and a trailing newline does not start another line. */
export function splitLines(text: string): string[] {
  if (text === '') return [];
  const lines = text.split('\n');
  if (text.endsWith('\n')) lines.pop();
  return lines;
}

function untruncated(
  content: string,
  totalLines: number,
  totalBytes: number,
  maxLines: number,
  maxBytes: number,
): TruncationResult {
  return {
    content,
    truncated: false,
    truncatedBy: null,
    totalLines,
    totalBytes,
    outputLines: totalLines,
    outputBytes: totalBytes,
    lastLinePartial: false,
    firstLineExceedsLimit: false,
    maxLines,
    maxBytes,
  };
}

/** Limits with their defaults, the content's lines and sizes, and whether it fits as it is. */
function measure(content: string, options: TruncationOptions) {
  const maxLines = options.maxLines ?? DEFAULT_MAX_LINES;
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
  const totalBytes = byteLength(content);
  const lines = splitLines(content);
  const totalLines = lines.length;
  return { maxLines, maxBytes, totalBytes, lines, totalLines, fits: totalLines <= maxLines && totalBytes <= maxBytes };
}

/** Keep whole lines from the start. Never a partial line; if the first line alone is too big the content is empty. */
export function truncateHead(content: string, options: TruncationOptions = {}): TruncationResult {
  const { maxLines, maxBytes, totalBytes, lines, totalLines, fits } = measure(content, options);
  if (fits) return untruncated(content, totalLines, totalBytes, maxLines, maxBytes);

  const base = { totalLines, totalBytes, lastLinePartial: false, maxLines, maxBytes };
  if (byteLength(lines[0]) > maxBytes) {
    return {
      ...base,
      content: '',
      truncated: true,
      truncatedBy: 'bytes',
      outputLines: 0,
      outputBytes: 0,
      firstLineExceedsLimit: true,
    };
  }

  const kept: string[] = [];
  let bytes = 0;
  let truncatedBy: 'lines' | 'bytes' = 'lines';
  for (let i = 0; i < lines.length; i++) {
    if (kept.length >= maxLines) {
      truncatedBy = 'lines';
      break;
    }
    const lineBytes = byteLength(lines[i]) + (kept.length > 0 ? 1 : 0);
    if (bytes + lineBytes > maxBytes) {
      truncatedBy = 'bytes';
      break;
    }
    kept.push(lines[i]);
    bytes += lineBytes;
  }
  // Only the trailing newline was over the limit: nothing is actually cut.
  if (kept.length === totalLines) return untruncated(content, totalLines, totalBytes, maxLines, maxBytes);
  const out = kept.join('\n');
  return {
    ...base,
    content: out,
    truncated: true,
    truncatedBy,
    outputLines: kept.length,
    outputBytes: byteLength(out),
    firstLineExceedsLimit: false,
  };
}

/** Keep whole lines from the end; if even the last line is too big, keep its last ≤ maxBytes bytes (`lastLinePartial`). */
export function truncateTail(content: string, options: TruncationOptions = {}): TruncationResult {
  const { maxLines, maxBytes, totalBytes, lines, totalLines, fits } = measure(content, options);
  if (fits) return untruncated(content, totalLines, totalBytes, maxLines, maxBytes);

  const kept: string[] = [];
  let bytes = 0;
  let truncatedBy: 'lines' | 'bytes' = 'lines';
  let lastLinePartial = false;
  for (let i = lines.length - 1; i >= 0; i--) {
    if (kept.length >= maxLines) {
      truncatedBy = 'lines';
      break;
    }
    const lineBytes = byteLength(lines[i]) + (kept.length > 0 ? 1 : 0);
    if (bytes + lineBytes > maxBytes) {
      truncatedBy = 'bytes';
      if (kept.length === 0) {
        const tail = lastBytesOf(lines[i], maxBytes);
        kept.unshift(tail);
        bytes = byteLength(tail);
        lastLinePartial = true;
      }
      break;
    }
    kept.unshift(lines[i]);
    bytes += lineBytes;
  }
  if (kept.length === totalLines && !lastLinePartial)
    return untruncated(content, totalLines, totalBytes, maxLines, maxBytes);
  const out = kept.join('\n');
  return {
    content: out,
    truncated: true,
    truncatedBy,
    totalLines,
    totalBytes,
    outputLines: kept.length,
    outputBytes: byteLength(out),
    lastLinePartial,
    firstLineExceedsLimit: false,
    maxLines,
    maxBytes,
  };
}

/** The last ≤ maxBytes bytes of `text`, cut at a UTF-8 character boundary. */
function lastBytesOf(text: string, maxBytes: number): string {
  const buf = Buffer.from(text, 'utf-8');
  if (buf.length <= maxBytes) return text;
  let start = buf.length - maxBytes;
  while (start < buf.length && (buf[start] & 0xc0) === 0x80) start++;
  return buf.subarray(start).toString('utf-8');
}

/** grep's per-line cap: first 500 characters + `... [truncated]`. */
export function truncateLine(
  line: string,
  maxChars: number = GREP_MAX_LINE_LENGTH,
): { text: string; wasTruncated: boolean } {
  if (line.length <= maxChars) return { text: line, wasTruncated: false };
  return { text: `${line.slice(0, maxChars)}... [truncated]`, wasTruncated: true };
}
