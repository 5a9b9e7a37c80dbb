/**
 * How `bash` commands are executed (Pi's `BashOperations`) and the local executor: a detached process group, killed as a
 * whole with SIGKILL on timeout or abort, with a lifeline on fd 3 so no command outlives its worker unobserved. Commands
 * run with the scrubbed tool environment ({@link toolEnvironment}) unless the caller passes its own.
 */
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import nodePath from 'node:path';
import type { ProcessWrapper } from './sandbox.js';
import { toolEnvironment } from './tool-env.js';

/**
 * How commands are executed (Pi's `BashOperations`). `exec` streams output through `onData` and resolves with the exit
 * code (null when killed by a signal) and, when the command ran in a cgroup of its own (`call-cgroup.ts`), whether the
 * kernel killed a process of it for its memory limit; it rejects with `Error("aborted")` on abort and
 * `Error("timeout:<seconds>")` on timeout, and with the underlying error when the command cannot be started.
 */
export interface BashOperations {
  exec(
    command: string,
    cwd: string,
    options: {
      onData: (data: Buffer) => void;
      signal?: AbortSignal;
      timeout?: number;
      env?: NodeJS.ProcessEnv;
      /** Runs the shell through this (the sandbox, `sandbox.ts`); the local executor honours it. */
      wrap?: ProcessWrapper;
    },
  ): Promise<{ exitCode: number | null; outOfMemory?: boolean }>;
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

/** Reads the lifeline on fd 3 in the background; EOF without "ok" (the worker died) kills the process group. */
const WATCHDOG = '{ read -r _ <&3 || kill -KILL 0; } & exec 3<&-';

export function createLocalBashOperations(localOptions: LocalBashOptions = {}): BashOperations {
  return {
    exec(command, cwd, { onData, signal, timeout, env, wrap }) {
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
        const argv = [...shell.args, watched ? `${WATCHDOG}\n${command}` : command];
        const run = wrap
          ? wrap(shell.shell, argv, env ?? toolEnvironment(), watched ? [3] : [])
          : { file: shell.shell, args: argv, env: env ?? toolEnvironment() };
        const child = spawn(run.file, run.args, {
          cwd,
          detached: true,
          env: run.env,
          stdio: watched ? ['ignore', 'pipe', 'pipe', 'pipe'] : ['ignore', 'pipe', 'pipe'],
        });
        const lifeline = watched
          ? (child.stdio[3] as NodeJS.WritableStream & { destroy(): void; on(e: 'error', l: () => void): unknown })
          : undefined;
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
          void run.cgroup?.release();
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
          const outOfMemory = run.cgroup?.oomKilled() ?? false;
          void (run.cgroup?.release() ?? Promise.resolve()).then(() => {
            if (signal?.aborted) reject(new Error('aborted'));
            else if (timedOut) reject(new Error(`timeout:${timeout}`));
            else resolve({ exitCode: code, ...(outOfMemory ? { outOfMemory } : {}) });
          });
        });
      });
    },
  };
}
