/**
 * A workspace per conversation (issue 21 item 2). Under a workspace root, each workflow id gets a directory of its own,
 * named after the id (sanitised) and its SHA-256, so it is the same on every run of a continue-as-new chain and on
 * every worker that shares the root:
 *
 * ```
 * <root>/                       0700, owned by the worker's user
 *   <sanitised id>-<16 hex>/
 *     run.json                  { workflowId } — whose directory this is (read by the sweep)
 *     workspace/                the run's files: file tools and bash confine to it (unless a shared cwd is configured)
 *     tmp/                      the run's private temporary directory: bash full-output logs (not in the sandbox)
 * ```
 *
 * Keel's own data (`.keel/`, the payload store, the dev server's database) never lives under the root unless the
 * operator puts it there; the root defaults to `$KEEL_WORKSPACE_ROOT`, else `<os tmpdir>/keel-workspaces-<uid>`.
 *
 * Retention: a run's directory is removed once its workflow id's latest run has been closed for `retainClosedMs`
 * (default 1 hour), or when Temporal no longer knows the id. The worker checks every `sweepIntervalMs` (default 10
 * minutes, first when a built-in tool runs after the worker started) through the activity's client; a directory with a
 * tool call in progress is never removed. No workflow code is involved.
 */
import { createHash } from 'node:crypto';
import { access, chmod, cp, lstat, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';

/** Where conversations' directories live and how long they are kept (`builtinTools({ workspaces })`). */
export interface RunWorkspacesOptions {
  /** Directory holding one directory per conversation. Default `$KEEL_WORKSPACE_ROOT`, else `<tmpdir>/keel-workspaces-<uid>`. */
  root?: string;
  /** A conversation's directory is removed once its workflow has been closed this long (ms). Default 1 hour. */
  retainClosedMs?: number;
  /** How often the worker looks for closed conversations (ms). Default 10 minutes; 0: only when {@link RunWorkspaces.sweep} is called. */
  sweepIntervalMs?: number;
}

/** The directories of one conversation. */
export interface RunDirs {
  workflowId: string;
  /** `<root>/<name>`: removed as a whole by the sweep. */
  dir: string;
  /** The workspace the tools work in (the shared cwd when one is configured). */
  workspace: string;
  /** The run's private temporary directory (bash full-output logs). */
  tmpDir: string;
}

/**
 * The conversation whose workspace a new conversation's starts as a copy of — a fork's original (issue 37 item 2,
 * docs/runs.md#fork-and-rewind) — or undefined. Asked once, when the conversation's directory is made.
 */
export type WorkspaceOrigin = (workflowId: string) => Promise<string | undefined>;

/** The default workspace root: `$KEEL_WORKSPACE_ROOT`, else `<os tmpdir>/keel-workspaces-<uid>`. */
export function defaultWorkspaceRoot(): string {
  const fromEnv = process.env.KEEL_WORKSPACE_ROOT;
  if (fromEnv) return path.resolve(fromEnv);
  const uid = typeof process.getuid === 'function' ? process.getuid() : 'user';
  return path.join(tmpdir(), `keel-workspaces-${uid}`);
}

/** The directory name of a workflow id: readable prefix + 16 hex of its SHA-256 (distinct ids, distinct names). */
export function runDirName(workflowId: string): string {
  const readable = workflowId.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 48);
  const hash = createHash('sha256').update(workflowId).digest('hex').slice(0, 16);
  return `${readable}-${hash}`;
}

/** The per-conversation directories of one worker (see the module comment). */
export class RunWorkspaces {
  readonly root: string;
  readonly retainClosedMs: number;
  readonly sweepIntervalMs: number;
  /** A workspace every run shares (`builtinTools({ cwd })`), or undefined: one per conversation. */
  readonly shared: string | undefined;
  private rootReady?: Promise<void>;
  private readonly ready = new Map<string, Promise<RunDirs>>();
  private readonly busy = new Map<string, number>();
  private sweeper?: NodeJS.Timeout;
  private readonly listeners: ((workflowId: string) => void)[] = [];

  constructor(options: RunWorkspacesOptions = {}, shared?: string) {
    this.root = path.resolve(options.root ?? defaultWorkspaceRoot());
    this.retainClosedMs = options.retainClosedMs ?? 60 * 60 * 1000;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 10 * 60 * 1000;
    this.shared = shared === undefined ? undefined : path.resolve(shared);
  }

  /**
   * The directories of `workflowId`, created (0700) on first use. A new directory's workspace starts as a copy of the
   * workspace of the conversation `origin` names (a fork's original), when this root has it.
   */
  forRun(workflowId: string, origin?: WorkspaceOrigin): Promise<RunDirs> {
    let dirs = this.ready.get(workflowId);
    if (!dirs) {
      dirs = this.create(workflowId, origin);
      this.ready.set(workflowId, dirs);
      dirs.catch(() => this.ready.delete(workflowId));
    }
    return dirs;
  }

  /** Runs `fn` with the run's directories, which the sweep leaves alone meanwhile. */
  async use<T>(workflowId: string, fn: (dirs: RunDirs) => Promise<T>, origin?: WorkspaceOrigin): Promise<T> {
    this.busy.set(workflowId, (this.busy.get(workflowId) ?? 0) + 1);
    try {
      return await fn(await this.forRun(workflowId, origin));
    } finally {
      const n = (this.busy.get(workflowId) ?? 1) - 1;
      if (n <= 0) this.busy.delete(workflowId);
      else this.busy.set(workflowId, n);
    }
  }

  /** Called with the workflow id of each directory a sweep removes (to drop what was cached for it). */
  onRemoved(listener: (workflowId: string) => void): void {
    this.listeners.push(listener);
  }

  private async ensureRoot(): Promise<void> {
    this.rootReady ??= (async () => {
      await mkdir(this.root, { recursive: true, mode: 0o700 });
      const st = await lstat(this.root);
      const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
      if (!st.isDirectory() || st.uid !== uid)
        throw new Error(
          `Workspace root ${this.root} is not a directory owned by this worker's user (uid ${uid}). ` +
            'Set KEEL_WORKSPACE_ROOT (or builtinTools({ workspaces: { root } })) to a directory of its own.',
        );
      if ((st.mode & 0o077) !== 0) await chmod(this.root, 0o700);
    })();
    this.rootReady.catch(() => (this.rootReady = undefined));
    return this.rootReady;
  }

  private async create(workflowId: string, origin: WorkspaceOrigin | undefined): Promise<RunDirs> {
    await this.ensureRoot();
    const dir = path.join(this.root, runDirName(workflowId));
    const workspace = this.shared ?? path.join(dir, 'workspace');
    const tmpDir = path.join(dir, 'tmp');
    const fresh = !this.shared && origin !== undefined && !(await exists(dir));
    await mkdir(tmpDir, { recursive: true, mode: 0o700 });
    if (!this.shared) await mkdir(workspace, { recursive: true, mode: 0o700 });
    if (fresh) await this.copyFrom(await origin(workflowId).catch(() => undefined), workspace);
    await writeFile(path.join(dir, 'run.json'), `${JSON.stringify({ workflowId })}\n`, { mode: 0o600 });
    return { workflowId, dir, workspace, tmpDir };
  }

  /** Copies the workspace of conversation `from` (when this root has it) into `workspace`; links are copied as links. */
  private async copyFrom(from: string | undefined, workspace: string): Promise<void> {
    if (from === undefined) return;
    const source = path.join(this.root, runDirName(from), 'workspace');
    if (!(await exists(source))) return;
    await cp(source, workspace, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
  }

  /** Starts the periodic sweep on `client` (once; the timer does not keep the process alive). */
  startSweeping(client: Client): void {
    if (this.sweeper || this.sweepIntervalMs <= 0) return;
    const tick = () => void this.sweep(client).catch(() => {});
    this.sweeper = setInterval(tick, this.sweepIntervalMs);
    this.sweeper.unref();
    tick();
  }

  /** Stops the periodic sweep. */
  stopSweeping(): void {
    if (this.sweeper) clearInterval(this.sweeper);
    this.sweeper = undefined;
  }

  /**
   * Removes the directory of every conversation whose workflow has been closed for `retainClosedMs`, or that Temporal
   * does not know (anymore). Returns the workflow ids removed. A directory in use, or one whose workflow cannot be
   * described (Temporal unreachable), is kept.
   */
  async sweep(client: Client): Promise<string[]> {
    let names: string[];
    try {
      names = await readdir(this.root);
    } catch {
      return [];
    }
    const removed: string[] = [];
    for (const name of names) {
      const dir = path.join(this.root, name);
      let workflowId: string;
      try {
        workflowId = (JSON.parse(await readFile(path.join(dir, 'run.json'), 'utf8')) as { workflowId: string })
          .workflowId;
      } catch {
        continue; // not a run directory (or being created)
      }
      if (typeof workflowId !== 'string' || this.busy.has(workflowId)) continue;
      if (!(await this.expired(client, workflowId))) continue;
      if (this.busy.has(workflowId)) continue;
      this.ready.delete(workflowId);
      await rm(dir, { recursive: true, force: true });
      for (const l of this.listeners) l(workflowId);
      removed.push(workflowId);
    }
    return removed;
  }

  private async expired(client: Client, workflowId: string): Promise<boolean> {
    try {
      const d = await client.workflow.getHandle(workflowId).describe();
      if (d.status.name === 'RUNNING') return false;
      const closedAt = d.closeTime?.getTime() ?? Date.now();
      return Date.now() - closedAt >= this.retainClosedMs;
    } catch (error) {
      return error instanceof WorkflowNotFoundError;
    }
  }
}

async function exists(p: string): Promise<boolean> {
  return access(p).then(
    () => true,
    () => false,
  );
}
