/**
 * `bash` output handling: streamed UTF-8 accumulation with a tail window, the 0600 temp file
 * `<run tmp dir or OS tmpdir>/pi-bash-<16 hex>.log` for long output, and Pi's truncation notice.
 */
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import nodePath from 'node:path';
import {
  DEFAULT_MAX_BYTES,
  DEFAULT_MAX_LINES,
  byteLength,
  formatSize,
  type TruncationResult,
  truncateTail,
} from './truncate.js';
import { DEFAULT_OUTPUT_LOG_BYTES, TailLog } from './tail-log.js';

export interface BashToolDetails {
  truncation?: TruncationResult;
  fullOutputPath?: string;
}

function tempLogPath(dir: string = tmpdir()): string {
  return nodePath.join(dir, `pi-bash-${randomBytes(8).toString('hex')}.log`);
}

const WINDOW_KEEP_CHARS = 2 * DEFAULT_MAX_BYTES;

/** ANSI escape sequences and carriage returns (for the executor, not the tool). */
export function sanitizeOutput(text: string): string {
  return text
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, '')
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, '')
    .replace(/\x1b[@-Z\\-_]/g, '')
    .replace(/\r/g, '');
}

/**
 * Accumulates streamed output: decodes UTF-8 in stream mode (split characters are reassembled), counts lines and bytes
 * of everything, keeps a tail window large enough for exact tail truncation, and spills the raw bytes to the temp file
 * once a limit is exceeded.
 */
export class OutputAccumulator {
  private readonly decoder = new TextDecoder('utf-8');
  private window = '';
  private windowTrimmed = false;
  private bytes = 0;
  private newlines = 0;
  private endsWithNewline = false;
  private currentLineBytes = 0;
  private previousLineBytes = 0;
  private pendingRaw: Buffer[] | undefined = [];
  private stream: TailLog | undefined;
  fullOutputPath: string | undefined;

  /**
   * `logDir`: where the full-output file goes (the run's private temporary directory); default the OS tmpdir.
   * `maxLogBytes`: the most the file keeps (its tail; `tail-log.ts`), default 64 MiB.
   */
  constructor(
    private readonly transform?: (text: string) => string,
    private readonly logDir?: string,
    readonly maxLogBytes: number = DEFAULT_OUTPUT_LOG_BYTES,
  ) {}

  /** When the full-output file dropped the start of the output: how many bytes the output had in all. */
  get logCappedAt(): number | undefined {
    return this.stream?.capped ? this.stream.total : undefined;
  }

  push(data: Buffer): void {
    if (this.stream) this.stream.append(data);
    else this.pendingRaw?.push(data);
    this.addText(this.decoder.decode(data, { stream: true }));
  }

  /** Flushes the decoder (an incomplete trailing character becomes U+FFFD). */
  finish(): void {
    this.addText(this.decoder.decode());
  }

  private addText(decoded: string): void {
    const text = this.transform ? this.transform(decoded) : decoded;
    if (!text) return;
    this.bytes += byteLength(text);
    const lastNl = text.lastIndexOf('\n');
    if (lastNl === -1) {
      this.currentLineBytes += byteLength(text);
    } else {
      const prevNl = text.lastIndexOf('\n', lastNl - 1);
      this.previousLineBytes =
        prevNl === -1
          ? this.currentLineBytes + byteLength(text.slice(0, lastNl))
          : byteLength(text.slice(prevNl + 1, lastNl));
      this.currentLineBytes = byteLength(text.slice(lastNl + 1));
      for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) this.newlines++;
    }
    this.endsWithNewline = text.endsWith('\n');
    this.window += text;
    if (this.window.length > 2 * WINDOW_KEEP_CHARS) {
      let cut = this.window.length - WINDOW_KEEP_CHARS;
      const code = this.window.charCodeAt(cut);
      if (code >= 0xdc00 && code <= 0xdfff) cut++;
      this.window = this.window.slice(cut);
      this.windowTrimmed = true;
    }
    if (!this.fullOutputPath && (this.totalLines > DEFAULT_MAX_LINES || this.bytes > DEFAULT_MAX_BYTES))
      this.openFile();
  }

  get totalLines(): number {
    if (this.bytes === 0) return 0;
    return this.endsWithNewline ? this.newlines : this.newlines + 1;
  }

  /** Byte size of the last line (the one before a trailing newline). */
  get lastLineBytes(): number {
    return this.endsWithNewline ? this.previousLineBytes : this.currentLineBytes;
  }

  private openFile(): void {
    this.fullOutputPath = tempLogPath(this.logDir);
    this.stream = new TailLog(this.fullOutputPath, this.maxLogBytes);
    for (const chunk of this.pendingRaw ?? []) this.stream.append(chunk);
    this.pendingRaw = undefined;
  }

  /** Tail truncation of everything so far. */
  snapshot(): TruncationResult {
    const t = truncateTail(this.window);
    if (this.windowTrimmed) {
      t.totalLines = this.totalLines;
      t.totalBytes = this.bytes;
    }
    return t;
  }

  /** Waits until the temp file (if any) is completely written. */
  async close(): Promise<void> {
    await this.stream?.close();
  }
}

/** The output text with Pi's truncation notice, and the details. */
export function renderOutput(acc: OutputAccumulator): { text: string; details: BashToolDetails | undefined } {
  const t = acc.snapshot();
  let text = t.content;
  if (!t.truncated) return { text, details: undefined };
  const total = acc.logCappedAt;
  const path =
    total === undefined
      ? acc.fullOutputPath
      : `${acc.fullOutputPath} (its last ${formatSize(acc.maxLogBytes)} only: the output was ${formatSize(total)})`;
  const start = t.totalLines - t.outputLines + 1;
  const end = t.totalLines;
  if (t.lastLinePartial) {
    text += `\n\n[Showing last ${formatSize(t.outputBytes)} of line ${end} (line is ${formatSize(acc.lastLineBytes)}). Full output: ${path}]`;
  } else if (t.truncatedBy === 'lines') {
    text += `\n\n[Showing lines ${start}-${end} of ${t.totalLines}. Full output: ${path}]`;
  } else {
    text += `\n\n[Showing lines ${start}-${end} of ${t.totalLines} (${formatSize(DEFAULT_MAX_BYTES)} limit). Full output: ${path}]`;
  }
  return { text, details: { truncation: t, fullOutputPath: acc.fullOutputPath } };
}
