/**
 * The workspace size limit (issue 33 item 4): the total size of a run's workspace, checked without walking it on the
 * worker's event loop.
 *
 * - The figure is measured by a child process, `du -sb --one-file-system <workspace>` on the worker's host (apparent
 *   sizes in bytes, symlinks not followed, a hard-linked file counted once, other file systems not entered), bounded
 *   by a timeout: first before the workspace's first `write`/`edit`/`bash` call of this worker, then after every
 *   `bash` call (whatever it did). `write` and `edit` add their own delta (new size − old size of the file) without a
 *   walk. The figure lives in memory, one per workspace (a shared `cwd`: one for all runs).
 * - While the figure is over the limit, `write` and `edit` are refused with {@link workspaceFullError}; `bash` still
 *   runs (so `rm` can bring it back under) and is measured again after it.
 * - A call after which the workspace is over the limit (the one that pushed it over, and every `bash` while it stays
 *   over) gets {@link workspaceOverNotice} appended to its result.
 * - When `du` cannot run, fails or takes longer than the timeout, the figure stays what it was (unknown at first:
 *   nothing is refused) and the worker says so once on stderr.
 */
import { execFile, type ExecFileException } from 'node:child_process';
import { lstat } from 'node:fs/promises';
import type { AgentToolResult, ToolDefinition } from '../define-tool.js';

/** The default limit of a per-conversation workspace: 4 GiB. */
export const DEFAULT_WORKSPACE_BYTES = 4 * 1024 ** 3;
/** How long one measurement may take before it is stopped: 30 s. */
export const DEFAULT_MEASURE_TIMEOUT_MS = 30_000;

/** A size as the model reads it: `4.2GB`, `512.0MB`, `12.5KB`, `100B` (units of 1024). */
export function formatWorkspaceSize(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${(bytes / 1024 ** 3).toFixed(1)}GB`;
  if (bytes >= 1024 ** 2) return `${(bytes / 1024 ** 2).toFixed(1)}MB`;
  if (bytes >= 1024) return `${(bytes / 1024).toFixed(1)}KB`;
  return `${bytes}B`;
}

/** The refusal of `write` and `edit` while the workspace is over its limit. */
export function workspaceFullError(bytes: number, limit: number): Error {
  return new Error(
    `Workspace is over its size limit: ${formatWorkspaceSize(bytes)} of ${formatWorkspaceSize(limit)}. Remove or shrink files with bash (rm, truncate) to bring it under the limit; write and edit are refused until then.`,
  );
}

/** The line appended to the result of a call after which the workspace is over its limit. */
export function workspaceOverNotice(bytes: number, limit: number): string {
  return `[Workspace is over its size limit: ${formatWorkspaceSize(bytes)} of ${formatWorkspaceSize(limit)}. Remove or shrink files with bash (rm, truncate); write and edit are refused until it is under the limit.]`;
}

export interface WorkspaceSizeOptions {
  /** The limit, bytes. */
  limitBytes: number;
  /** The measuring command and its arguments before the directory. Default `['du', '-sb', '--one-file-system']`. */
  command?: readonly string[];
  /** A measurement taking longer is stopped (SIGKILL) and leaves the figure as it was. Default 30 s. */
  timeoutMs?: number;
  /** Where the one warning about a failed measurement goes. Default stderr. */
  warn?: (line: string) => void;
}

/** The size figure of one workspace directory and the limit it is held to. */
export class WorkspaceSize {
  readonly limitBytes: number;
  private figure: number | undefined;
  private measured?: Promise<void>;
  private started = 0;
  private applied = 0;
  private warned = false;

  constructor(
    readonly dir: string,
    private readonly options: WorkspaceSizeOptions,
  ) {
    this.limitBytes = options.limitBytes;
  }

  /** The last figure (bytes), undefined before the first measurement succeeded. */
  get bytes(): number | undefined {
    return this.figure;
  }

  /** Whether the last figure is over the limit. */
  get over(): boolean {
    return this.figure !== undefined && this.figure > this.limitBytes;
  }

  /** Measures once if never measured (awaited, the loop free meanwhile); then the figure as it stands. */
  async ensureMeasured(): Promise<void> {
    this.measured ??= this.measure();
    await this.measured;
  }

  /**
   * Runs the measuring command (a child process: nothing is walked on the event loop) and keeps its figure, unless a
   * measurement started later was applied first. Never throws: a failure leaves the figure as it was.
   */
  async measure(): Promise<void> {
    const seq = ++this.started;
    const [cmd, ...args] = this.options.command ?? ['du', '-sb', '--one-file-system'];
    const bytes = await new Promise<number | undefined>((resolve) => {
      execFile(
        cmd,
        [...args, this.dir],
        { timeout: this.options.timeoutMs ?? DEFAULT_MEASURE_TIMEOUT_MS, killSignal: 'SIGKILL', encoding: 'utf-8' },
        (error, stdout) => {
          const n = Number.parseInt(stdout.trim().split(/\s/)[0] ?? '', 10);
          // du exits 1 when a file vanished mid-walk (a parallel rm) but still prints its total.
          if (Number.isFinite(n) && (!error || typeof error.code === 'number')) return resolve(n);
          this.warnOnce(failureOf(cmd, error, stdout, this.options.timeoutMs ?? DEFAULT_MEASURE_TIMEOUT_MS));
          resolve(undefined);
        },
      );
    });
    if (bytes === undefined || seq < this.applied) return;
    this.applied = seq;
    this.figure = bytes;
  }

  /** A `write`/`edit` changed a file by `delta` bytes (new size − old size). */
  add(delta: number): void {
    if (this.figure !== undefined) this.figure = Math.max(0, this.figure + delta);
  }

  /** Throws {@link workspaceFullError} while the figure is over the limit (`write` and `edit`, before they write). */
  async refuseWhenOver(): Promise<void> {
    await this.ensureMeasured();
    if (this.over) throw workspaceFullError(this.figure!, this.limitBytes);
  }

  /** {@link workspaceOverNotice} when the figure is over the limit, else undefined. */
  notice(): string | undefined {
    return this.over ? workspaceOverNotice(this.figure!, this.limitBytes) : undefined;
  }

  private warnOnce(why: string): void {
    if (this.warned) return;
    this.warned = true;
    const line = `[keel] WARNING: the size of workspace ${this.dir} could not be measured (${why}); its size limit is not checked until a measurement succeeds.`;
    (this.options.warn ?? ((l: string) => process.stderr.write(`${l}\n`)))(line);
  }
}

/** Why a measurement gave no figure, in words. */
function failureOf(cmd: string, error: ExecFileException | null, stdout: string, timeoutMs: number): string {
  if (error?.killed) return `${cmd} took longer than ${timeoutMs} ms`;
  if (error?.code === 'ENOENT') return `${cmd} not found`;
  if (typeof error?.code === 'number') return `${cmd} exited with code ${error.code}`;
  if (error) return `${cmd} failed: ${error.message.split('\n')[0]}`;
  return `${cmd} printed ${JSON.stringify(stdout.slice(0, 80))}`;
}

/** The size of the regular file at `p` (not followed), 0 when there is none. */
export async function fileBytes(p: string): Promise<number> {
  try {
    const stats = await lstat(p);
    return stats.isFile() ? stats.size : 0;
  } catch {
    return 0;
  }
}

/** `result` with `line` appended to its text (a text block of its own when it has none), as the model reads it. */
export function withNotice<T>(result: AgentToolResult<T>, line: string | undefined): AgentToolResult<T> {
  if (line === undefined) return result;
  const content = [...(result.content ?? [])];
  const last = content.length - 1;
  const block = content[last];
  if (block && block.type === 'text') content[last] = { ...block, text: `${block.text}\n\n${line}` };
  else content.push({ type: 'text', text: line });
  return { ...result, content };
}

/**
 * `bash` held to the workspace's size limit: it always runs (a command that deletes must be possible while over), then
 * the workspace is measured again, whether the command succeeded or not; when it is over, {@link workspaceOverNotice}
 * is appended to the result (or to the error the model reads).
 */
export function measuredAfterEachCall<A, D>(tool: ToolDefinition<A, D>, size: WorkspaceSize): ToolDefinition<A, D> {
  return {
    ...tool,
    execute: async (toolCallId, args, signal, onUpdate, context) => {
      let result: AgentToolResult<D>;
      try {
        result = await tool.execute(toolCallId, args, signal, onUpdate, context);
      } catch (error) {
        await size.measure();
        const line = size.notice();
        if (line !== undefined && error instanceof Error) error.message = `${error.message}\n\n${line}`;
        throw error;
      }
      await size.measure();
      return withNotice(result, size.notice());
    },
  };
}
