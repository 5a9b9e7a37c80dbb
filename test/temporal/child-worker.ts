/** Keel workers in child processes, so a test can SIGKILL one mid-activity and start another. */
import { spawn, type ChildProcess } from 'node:child_process';
import { inject } from 'vitest';

const started: ChildProcess[] = [];

/**
 * Starts `fixture` (a worker script that prints "ready" once polling) on the shared dev server and workflow bundle,
 * with `env` added (e.g. KEEL_TASK_QUEUE), in `cwd` (default this process's). Resolves when it is ready.
 */
export function spawnWorker(fixture: string, env: Record<string, string>, cwd?: string): Promise<ChildProcess> {
  // tsx by its URL: resolved from this repository whatever the child's directory
  const child = spawn(process.execPath, ['--import', import.meta.resolve('tsx'), fixture], {
    ...(cwd ? { cwd } : {}),
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      KEEL_BUNDLE: inject('workflowBundlePath'),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  started.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`child worker exited with ${code}`)));
  });
}

/** Two workers of `fixture` with `env`, started side by side (see spawnWorker). */
export function workerPair(fixture: string, env: Record<string, string>): Promise<ChildProcess[]> {
  return Promise.all([spawnWorker(fixture, env), spawnWorker(fixture, env)]);
}

/** Starts the next workers (`start`) before it SIGKILLs `old`, so the runs never lack one; returns the new ones. */
export async function replaceWorkers(
  old: ChildProcess[],
  start: () => Promise<ChildProcess[]>,
): Promise<ChildProcess[]> {
  const next = await start();
  await Promise.all(old.map(killWorker));
  return next;
}

/** SIGKILL: no shutdown, no completion sent; what a crashed or OOM-killed worker looks like to Temporal. */
export function killWorker(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

/** For afterAll: kills every worker this file started that still runs. */
export function killAllWorkers(): void {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
}
