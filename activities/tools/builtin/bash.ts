/**
 * `bash` (Pi reference §C.2): runs a command in a detached process group (killed as a whole with SIGKILL on timeout or
 * abort), streams stdout+stderr as UTF-8, keeps the tail (2000 lines / 50 KB) and saves the full output to a 0600 temp
 * file `<tmpdir>/pi-bash-<16 hex>.log` when it is longer.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, existsSync, type WriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import nodePath from 'node:path';
import { defineTool, type ToolDefinition, type ToolUpdateCallback } from '../define-tool.js';
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, byteLength, formatSize, type TruncationResult, truncateTail } from './truncate.js';

export interface BashArgs {
  command: string;
  /** Seconds. No default timeout. */
  timeout?: number;
}

export interface BashToolDetails {
  truncation?: TruncationResult;
  fullOutputPath?: string;
}

/**
 * How commands are executed (Pi's `BashOperations`). `exec` streams output through `onData` and resolves with the exit
 * code (null when killed by a signal); it rejects with `Error("aborted")` on abort and `Error("timeout:<seconds>")` on
 * timeout, and with the underlying error when the command cannot be started.
 */
export interface BashOperations {
  exec(
    command: string,
    cwd: string,
    options: { onData: (data: Buffer) => void; signal?: AbortSignal; timeout?: number; env?: NodeJS.ProcessEnv },
  ): Promise<{ exitCode: number | null }>;
}

export interface ShellConfig {
  shell: string;
  args: string[];
}

export interface LocalBashOptions {
  /** Explicit shell; must exist, else `Custom shell path not found: <path>`. */
  shellPath?: string;
  /** Test hook: use exactly this shell and arguments, no existence check (Pi's shell-config override). */
  shellConfig?: ShellConfig;
}

const MAX_TIMEOUT_SECONDS = 2147483.647;

/** Explicit shellPath, else /bin/bash, else `bash` on PATH, else `sh`; arguments `-c <command>`. */
export function resolveShell(options: LocalBashOptions = {}): ShellConfig {
  if (options.shellConfig) return options.shellConfig;
  if (options.shellPath) {
    if (!existsSync(options.shellPath)) throw new Error(`Custom shell path not found: ${options.shellPath}`);
    return { shell: options.shellPath, args: ['-c'] };
  }
  if (existsSync('/bin/bash')) return { shell: '/bin/bash', args: ['-c'] };
  for (const dir of (process.env.PATH ?? '').split(nodePath.delimiter)) {
    if (dir && existsSync(nodePath.join(dir, 'bash'))) return { shell: nodePath.join(dir, 'bash'), args: ['-c'] };
  }
  return { shell: 'sh', args: ['-c'] };
}

/** SIGKILL to the whole process group led by `pid` (falls back to the process alone). */
export function killProcessTree(pid: number): void {
  try {
    process.kill(-pid, 'SIGKILL');
  } catch {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** Local execution (Pi's `createLocalBashOperations`). */
/** Reads the lifeline on fd 3 in the background; EOF without "ok" (the worker died) kills the process group. */
const WATCHDOG = '{ read -r _ <&3 || kill -KILL 0; } & exec 3<&-';

export function createLocalBashOperations(localOptions: LocalBashOptions = {}): BashOperations {
  return {
    exec(command, cwd, { onData, signal, timeout, env }) {
      return new Promise((resolve, reject) => {
        let shell: ShellConfig;
        try {
          shell = resolveShell(localOptions);
        } catch (error) {
          reject(error);
          return;
        }
        if (!existsSync(cwd)) {
          reject(new Error(`Working directory does not exist: ${cwd}\nCannot execute bash commands.`));
          return;
        }
        // fd 3 is a lifeline from this worker: if the worker dies (even by SIGKILL) the watchdog reads EOF and kills the
        // whole process group, so no command outlives its worker unobserved. On a normal exit we send "ok" and the
        // watchdog leaves intentional background processes alone (Pi's behaviour).
        const watched = shell.args.length === 1 && shell.args[0] === '-c';
        const child = spawn(shell.shell, [...shell.args, watched ? `${WATCHDOG}\n${command}` : command], {
          cwd,
          detached: true,
          env: env ?? process.env,
          stdio: watched ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
        });
        const lifeline = watched ? (child.stdio[3] as NodeJS.WritableStream & { destroy(): void; on(e: 'error', l: () => void): unknown }) : undefined;
        lifeline?.on('error', () => {});
        let timedOut = false;
        let killed = false;
        let timeoutHandle: NodeJS.Timeout | undefined;
        const kill = () => {
          killed = true;
          if (child.pid) killProcessTree(child.pid);
        };
        const onAbort = () => kill();
        const cleanup = () => {
          if (timeoutHandle) clearTimeout(timeoutHandle);
          signal?.removeEventListener('abort', onAbort);
        };
        if (timeout !== undefined && timeout > 0) {
          timeoutHandle = setTimeout(() => {
            timedOut = true;
            kill();
          }, timeout * 1000);
        }
        child.stdout?.on('data', onData);
        child.stderr?.on('data', onData);
        child.on('error', (error) => {
          cleanup();
          reject(error);
        });
        // A process that escaped the group could keep the pipes open after a kill; don't wait for it forever.
        child.on('exit', () => {
          lifeline?.end('ok\n');
          if (killed) {
            setTimeout(() => {
              child.stdout?.destroy();
              child.stderr?.destroy();
            }, 1000).unref();
          }
        });
        if (signal) {
          if (signal.aborted) onAbort();
          else signal.addEventListener('abort', onAbort, { once: true });
        }
        child.on('close', (code) => {
          cleanup();
          if (signal?.aborted) reject(new Error('aborted'));
          else if (timedOut) reject(new Error(`timeout:${timeout}`));
          else resolve({ exitCode: code });
        });
      });
    },
  };
}

function tempLogPath(): string {
  return nodePath.join(tmpdir(), `pi-bash-${randomBytes(8).toString('hex')}.log`);
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
  private stream: WriteStream | undefined;
  private streamError: Error | undefined;
  fullOutputPath: string | undefined;

  constructor(private readonly transform?: (text: string) => string) {}

  push(data: Buffer): void {
    if (this.stream) this.stream.write(data);
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
      this.previousLineBytes = prevNl === -1 ? this.currentLineBytes + byteLength(text.slice(0, lastNl)) : byteLength(text.slice(prevNl + 1, lastNl));
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
    if (!this.fullOutputPath && (this.totalLines > DEFAULT_MAX_LINES || this.bytes > DEFAULT_MAX_BYTES)) this.openFile();
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
    this.fullOutputPath = tempLogPath();
    this.stream = createWriteStream(this.fullOutputPath, { flags: 'wx', mode: 0o600 });
    this.stream.on('error', (error) => {
      this.streamError = error;
    });
    for (const chunk of this.pendingRaw ?? []) this.stream.write(chunk);
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
    const stream = this.stream;
    if (!stream) return;
    await new Promise<void>((resolve) => {
      if (stream.closed || this.streamError) resolve();
      else {
        stream.once('close', () => resolve());
        stream.once('error', () => resolve());
        stream.end();
      }
    });
  }
}

/** The output text with Pi's truncation notice, and the details. */
function renderOutput(acc: OutputAccumulator): { text: string; details: BashToolDetails | undefined } {
  const t = acc.snapshot();
  let text = t.content;
  if (!t.truncated) return { text, details: undefined };
  const path = acc.fullOutputPath;
  const start = t.totalLines - t.outputLines + 1;
  const end = t.totalLines;
  if (t.lastLinePartial) {
    text += `\n\n[Showing last ${formatSize(t.outputBytes)} of line ${end} (line is ${formatSize(acc.lastLineBytes)}). Full output: ${path}]`;
  } else if (t.truncatedBy === 'lines') {
    text += `\n\n[Showing lines ${start}-${end} of ${t.totalLines}. Full output: ${path}]`;
  } else {
    text += `\n\n[Showing lines ${start}-${end} of ${t.totalLines} (${formatSize(DEFAULT_MAX_BYTES)} limit). Full output: ${path}]`;
  }
  return { text, details: { truncation: t, fullOutputPath: path } };
}

export interface BashToolOptions extends LocalBashOptions {
  cwd: string;
  /** Custom execution (e.g. remote); the local shell resolution is then not used. */
  operations?: BashOperations;
  /** Prepended to every command as `<prefix>\n<command>`. */
  commandPrefix?: string;
  /** Extra environment variables on top of the process environment. */
  env?: NodeJS.ProcessEnv;
  /** Minimum time between progress snapshots. Default 100 ms. */
  updateIntervalMs?: number;
}

export const bashParameters = {
  type: 'object',
  properties: {
    command: { type: 'string', description: 'Bash command to execute' },
    timeout: { type: 'number', description: 'Timeout in seconds (optional, no default timeout)' },
  },
  required: ['command'],
} as const;

function validateTimeout(timeout: number | undefined): void {
  if (timeout === undefined) return;
  if (typeof timeout !== 'number' || !Number.isFinite(timeout) || timeout <= 0) {
    throw new Error('Invalid timeout: must be a finite number of seconds');
  }
  if (timeout > MAX_TIMEOUT_SECONDS) throw new Error(`Invalid timeout: maximum is ${MAX_TIMEOUT_SECONDS} seconds`);
}

function bashSummary(args: BashArgs | undefined): string {
  const first = String(args?.command ?? '').split('\n')[0];
  return `bash ${first.length > 80 ? `${first.slice(0, 79)}…` : first}`;
}

export function createBashTool(options: BashToolOptions): ToolDefinition<BashArgs, BashToolDetails | undefined> {
  const ops = options.operations ?? createLocalBashOperations(options);
  const interval = options.updateIntervalMs ?? 100;
  return defineTool<BashArgs, BashToolDetails | undefined>({
    name: 'bash',
    label: 'bash',
    description: `Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last ${DEFAULT_MAX_LINES} lines or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.`,
    parameters: bashParameters,
    idempotent: false,
    summary: bashSummary,
    async execute(_toolCallId, { command, timeout }, signal, onUpdate) {
      validateTimeout(timeout);
      if (signal?.aborted) throw new Error('Command aborted');
      const resolved = options.commandPrefix ? `${options.commandPrefix}\n${command}` : command;
      const update: ToolUpdateCallback<BashToolDetails | undefined> = onUpdate ?? (() => {});
      const acc = new OutputAccumulator();

      let lastUpdate = Date.now();
      let timer: NodeJS.Timeout | undefined;
      const emit = () => {
        lastUpdate = Date.now();
        const t = acc.snapshot();
        update({
          content: [{ type: 'text', text: t.content }],
          details: { truncation: t.truncated ? t : undefined, fullOutputPath: acc.fullOutputPath },
        });
      };
      update({ content: [], details: undefined });

      let exitCode: number | null = null;
      let failure: unknown;
      try {
        ({ exitCode } = await ops.exec(resolved, options.cwd, {
          onData: (data) => {
            acc.push(data);
            if (timer) return;
            const wait = interval - (Date.now() - lastUpdate);
            if (wait <= 0) emit();
            else
              timer = setTimeout(() => {
                timer = undefined;
                emit();
              }, wait);
          },
          signal,
          timeout,
          env: options.env ? { ...process.env, ...options.env } : undefined,
        }));
      } catch (error) {
        failure = error;
      } finally {
        if (timer) clearTimeout(timer);
        timer = undefined;
      }
      acc.finish();
      await acc.close();
      emit();

      const { text, details } = renderOutput(acc);
      if (failure !== undefined) {
        const message = failure instanceof Error ? failure.message : String(failure);
        let status: string | undefined;
        if (message === 'aborted') status = 'Command aborted';
        else if (message.startsWith('timeout:')) status = `Command timed out after ${message.slice('timeout:'.length)} seconds`;
        if (!status) throw failure;
        throw new Error(text ? `${text}\n\n${status}` : status);
      }
      const output = text || '(no output)';
      if (exitCode !== 0 && exitCode !== null) throw new Error(`${output}\n\nCommand exited with code ${exitCode}`);
      return { content: [{ type: 'text', text: output }], details };
    },
  });
}

export interface BashExecutionResult {
  /** Tail-truncated output, ANSI escapes and carriage returns removed. */
  output: string;
  exitCode: number | undefined;
  cancelled: boolean;
  truncated: boolean;
  fullOutputPath?: string;
}

/**
 * Pi's `executeBashWithOperations` (used for user-typed shell commands, not by the tool): same streaming and temp file,
 * output sanitised, and a structured result instead of throwing.
 */
export async function executeBashWithOperations(
  command: string,
  cwd: string,
  operations: BashOperations,
  options: { signal?: AbortSignal; onChunk?: (text: string) => void; env?: NodeJS.ProcessEnv } = {},
): Promise<BashExecutionResult> {
  const acc = new OutputAccumulator(sanitizeOutput);
  const decoder = new TextDecoder('utf-8');
  let exitCode: number | undefined;
  let cancelled = false;
  try {
    const result = await operations.exec(command, cwd, {
      onData: (data) => {
        acc.push(data);
        if (options.onChunk) options.onChunk(sanitizeOutput(decoder.decode(data, { stream: true })));
      },
      signal: options.signal,
      env: options.env ? { ...process.env, ...options.env } : undefined,
    });
    exitCode = result.exitCode ?? undefined;
  } catch (error) {
    if (error instanceof Error && error.message === 'aborted') cancelled = true;
    else {
      await acc.close();
      throw error;
    }
  }
  acc.finish();
  await acc.close();
  const t = acc.snapshot();
  return { output: t.content, exitCode, cancelled, truncated: t.truncated, fullOutputPath: acc.fullOutputPath };
}
