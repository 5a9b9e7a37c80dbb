/**
 * `bash` (Pi reference §C.2): runs a command in the workspace through {@link BashOperations}, streams stdout+stderr as
 * UTF-8, keeps the tail (2000 lines / 50 KB) and saves the full output to a 0600 temp file when it is longer.
 *
 * With a `sandbox` (what `builtinTools` gives it by default) the command runs inside bubblewrap (`sandbox.ts`): the
 * workspace is its only writable path besides a fresh `/tmp`, no network unless allowed, its own `/proc`, limits on
 * CPU, memory, processes and file size, and background processes end with the command. Without one it runs as the
 * worker's user, unconfined. Either way its environment is the allowlist of `tool-env.ts`, plus `env`.
 */
import { Type, type Static } from 'typebox';
import { defineTool, type ToolDefinition, type ToolUpdateCallback } from '../define-tool.js';
import { createLocalBashOperations, type BashOperations, type LocalBashOptions } from './bash-operations.js';
import { OutputAccumulator, renderOutput, type BashToolDetails } from './bash-output.js';
import type { Sandbox } from './sandbox.js';
import { toolEnvironment, type ToolEnvOptions } from './tool-env.js';
import { DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, formatSize } from './truncate.js';
import { thrownMessage } from '../../../common/errors.js';

export { createLocalBashOperations, killProcessTree, resolveShell } from './bash-operations.js';
export type { BashOperations, LocalBashOptions, ShellConfig } from './bash-operations.js';
export { OutputAccumulator, sanitizeOutput } from './bash-output.js';
export type { BashToolDetails } from './bash-output.js';
export { executeBashWithOperations } from './bash-execute.js';
export type { BashExecutionResult } from './bash-execute.js';

/** The arguments of `bash`, from its schema `bashParameters`. */
export type BashArgs = Static<typeof bashParameters>;

const MAX_TIMEOUT_SECONDS = 2147483.647;

export interface BashToolOptions extends LocalBashOptions {
  cwd: string;
  /** Custom execution (e.g. remote); the local shell resolution is then not used. */
  operations?: BashOperations;
  /** Prepended to every command as `<prefix>\n<command>`. */
  commandPrefix?: string;
  /** Extra environment variables, set on top of the allowlisted environment. */
  env?: NodeJS.ProcessEnv;
  /** Which of the worker's variables the command sees: PATH, HOME, LANG, TERM, TZ (`tool-env.ts`) and those in `pass`. */
  inheritEnv?: ToolEnvOptions;
  /** Run every command in this sandbox (`sandbox.ts`); default none (`builtinTools` passes one by default). */
  sandbox?: Sandbox;
  /** The run's private temporary directory: full-output logs go there (default the OS tmpdir). */
  tmpDir?: string;
  /** Paths the sandboxed command may read besides the system and the workspace (`readOnlyPaths`). */
  readOnlyPaths?: readonly string[];
  /** Paths the sandboxed command may write besides the workspace (`allowedRoots`). */
  writablePaths?: readonly string[];
  /** Minimum time between progress snapshots. Default 100 ms. */
  updateIntervalMs?: number;
  /** The most a full-output log keeps (its tail, `tail-log.ts`), bytes. Default 64 MiB. */
  outputLogBytes?: number;
}

export const bashParameters = Type.Object({
  command: Type.String({ description: 'Bash command to execute' }),
  timeout: Type.Optional(Type.Number({ description: 'Timeout in seconds (optional, no default timeout)' })),
});

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

/** Appended to the output of a command whose call's cgroup ran out of memory (the kernel killed a process of it). */
export function outOfMemoryNotice(limitBytes: number): string {
  return `[Out of memory: the command's processes together reached this call's memory limit of ${formatSize(limitBytes)}, and the kernel killed at least one of them]`;
}

export function createBashTool(options: BashToolOptions): ToolDefinition<BashArgs, BashToolDetails | undefined> {
  const ops = options.operations ?? createLocalBashOperations(options);
  const interval = options.updateIntervalMs ?? 100;
  const wrap = options.sandbox?.wrapper({
    workspace: options.cwd,
    readOnly: options.readOnlyPaths,
    writable: options.writablePaths,
  });
  // In the sandbox HOME is its /tmp: the worker's home is not there.
  const baseEnv = () => ({ ...toolEnvironment(options.inheritEnv), ...(wrap ? { HOME: '/tmp' } : {}), ...options.env });
  return defineTool<typeof bashParameters, BashToolDetails | undefined>({
    name: 'bash',
    label: 'bash',
    description: `Execute a bash command in the current working directory. Returns stdout and stderr. Output is truncated to last ${DEFAULT_MAX_LINES} lines or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first). If truncated, full output is saved to a temp file. Optionally provide a timeout in seconds.`,
    parameters: bashParameters,
    idempotent: false,
    workerLocal: true,
    summary: bashSummary,
    async execute(_toolCallId, { command, timeout }, signal, onUpdate) {
      validateTimeout(timeout);
      if (signal?.aborted) throw new Error('Command aborted');
      const resolved = options.commandPrefix ? `${options.commandPrefix}\n${command}` : command;
      const update: ToolUpdateCallback<BashToolDetails | undefined> = onUpdate ?? (() => {});
      const acc = new OutputAccumulator(undefined, options.tmpDir, options.outputLogBytes);

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
      let outOfMemory: boolean | undefined;
      let failure: unknown;
      try {
        ({ exitCode, outOfMemory } = await ops.exec(resolved, options.cwd, {
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
          env: baseEnv(),
          ...(wrap ? { wrap } : {}),
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
        const message = thrownMessage(failure);
        let status: string | undefined;
        if (message === 'aborted') status = 'Command aborted';
        else if (message.startsWith('timeout:'))
          status = `Command timed out after ${message.slice('timeout:'.length)} seconds`;
        if (!status) throw failure;
        throw new Error(text ? `${text}\n\n${status}` : status);
      }
      const oom = outOfMemory && options.sandbox ? outOfMemoryNotice(options.sandbox.limits.callMemoryBytes) : '';
      const output = (text && oom ? `${text.trimEnd()}\n\n${oom}` : text || oom) || '(no output)';
      if (exitCode !== 0 && exitCode !== null) throw new Error(`${output}\n\nCommand exited with code ${exitCode}`);
      return { content: [{ type: 'text', text: output }], details };
    },
  });
}
