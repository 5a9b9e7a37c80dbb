import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import type {
  AgentToolResult,
  ToolContext,
  ToolDefinition,
  ToolUpdateCallback,
} from '../../../activities/tools/define-tool.js';
import { builtinTools } from '../../../activities/tools/builtin/index.js';

const created: string[] = [];

/** A fresh temp directory (real path), removed after the test. */
export function tempDir(prefix = 'keel-builtin-'): string {
  const dir = realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
  created.push(dir);
  return dir;
}

const logs: string[] = [];

/** Removes a bash full-output log after the test (the tool leaves them for the model to read). */
export function trackLog<T extends string | undefined>(file: T): T {
  if (file) logs.push(file);
  return file;
}

afterEach(() => {
  for (const dir of created.splice(0)) rmSync(dir, { recursive: true, force: true });
  for (const file of logs.splice(0)) rmSync(file, { force: true });
});

export const context: ToolContext = {
  workflowId: 'wf',
  runId: 'run',
  idempotencyKey: 'wf/call',
  attempt: 1,
  metadata: {},
};

/** The built-in tools on the shared workspace `cwd`; the runs' private directories under a fresh temp root. */
export function tools(
  cwd: string,
  opts: { allowedRoots?: string[]; useExternalSearch?: boolean } = {},
): Record<string, ToolDefinition> {
  const workspaces = { root: tempDir('keel-runs-'), sweepIntervalMs: 0 };
  return Object.fromEntries(builtinTools({ cwd, workspaces, ...opts }).map((t) => [t.name, t]));
}

export function run<T = unknown>(
  tool: ToolDefinition<any, any>,
  args: unknown,
  options: { signal?: AbortSignal; onUpdate?: ToolUpdateCallback<any> } = {},
): Promise<AgentToolResult<T>> {
  return tool.execute(
    'call-1',
    args,
    options.signal ?? new AbortController().signal,
    options.onUpdate ?? (() => {}),
    context,
  );
}

/** The text of the first text block. */
export function text(result: AgentToolResult<unknown>): string {
  const block = result.content?.find((c) => c.type === 'text');
  return block && block.type === 'text' ? block.text : '';
}

/** The message a rejected promise carries. */
export async function errorOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected the promise to reject');
}

export const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
