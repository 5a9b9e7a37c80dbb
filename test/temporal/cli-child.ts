/**
 * The `keel` CLI as a child process, for tests that assert its exact output: run a command to its end (`keelCli`), or
 * start a long-running one (`keel worker`, `keel dev`) and wait for a line (`spawnUntil`), then stop it (`stopChild`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `keel …` to its end (killed after `timeoutMs`, which rejects). */
export function keelCli(
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs?: number } = {},
): Promise<CliResult> {
  return runProcess(process.execPath, [BIN, ...args], {
    cwd: opts.cwd ?? ROOT,
    env: { ...(opts.env ?? process.env), NO_COLOR: '1' },
    timeoutMs: opts.timeoutMs,
  });
}

/** The Web UI address the CLI tests pass with `--ui`, so the links the CLI prints are known texts. */
export const TEST_UI = 'http://ui.test';

/** Runs `keel --address <address> --task-queue <taskQueue> --ui http://ui.test <args…>` to its end. */
export function keelAt(args: string[], address: string, taskQueue: string): Promise<CliResult> {
  return keelCli(['--address', address, '--task-queue', taskQueue, '--ui', TEST_UI, ...args]);
}

/** Runs any command to its end, its output collected (killed after `timeoutMs`, default 60 s, which rejects). */
export function runProcess(
  cmd: string,
  args: string[],
  opts: { cwd: string; env: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<CliResult> {
  const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ['ignore', 'pipe', 'pipe'] });
  return new Promise((resolve, reject) => {
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`${cmd} ${args.join(' ')} timed out\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 60_000);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Spawns `keel …` and resolves once `ready` appears in its output (stdout or stderr); rejects if it exits first. */
export async function spawnUntil(
  args: string[],
  ready: string,
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ child: ChildProcess; output: { text: string } }> {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: opts.cwd ?? ROOT,
    env: { ...(opts.env ?? process.env), NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output = { text: '' };
  await new Promise<void>((resolve, reject) => {
    const onData = (d: Buffer) => {
      output.text += d.toString();
      if (output.text.includes(ready)) resolve();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`keel ${args.join(' ')} exited ${code}: ${output.text}`)));
  });
  return { child, output };
}

/** Stops a child started by `spawnUntil` (SIGTERM by default) and resolves with its exit code. */
export function stopChild(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    child.once('exit', (code) => resolve(code));
    child.kill(signal);
  });
}
