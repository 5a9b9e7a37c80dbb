/**
 * A bash command must not outlive its worker: when the worker process dies (SIGKILL, OOM), the command's process group
 * is killed too. After a normal exit, background jobs the command started on purpose are left alone (Pi's behaviour).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const CHILD = fileURLToPath(new URL('./fixtures/bash-child.ts', import.meta.url));
const spawned: ChildProcess[] = [];

function running(marker: string): boolean {
  return execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' })
    .split('\n')
    .some((l) => l.trim() === `sleep ${marker}`);
}

async function waitFor(fn: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (fn()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return fn();
}

function startChild(command: string, until: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, command], { stdio: ['ignore', 'pipe', 'inherit'] });
  spawned.push(child);
  return new Promise((resolve) =>
    child.stdout!.on('data', (d: Buffer) => d.toString().includes(until) && resolve(child)),
  );
}

afterAll(() => {
  for (const c of spawned) c.kill('SIGKILL');
  for (const m of ['41.7', '42.7']) if (running(m)) execFileSync('pkill', ['-KILL', '-f', `^sleep ${m}$`]);
});

describe('bash process group lifetime', () => {
  it('dies with its worker (SIGKILL)', async () => {
    const child = await startChild('sleep 41.7', 'started');
    expect(await waitFor(() => running('41.7'), 5_000)).toBe(true);
    child.kill('SIGKILL');
    expect(await waitFor(() => !running('41.7'), 2_000)).toBe(true);
  });

  it('leaves intentional background jobs alone after a normal exit', async () => {
    const child = await startChild('sleep 42.7 >/dev/null 2>&1 & echo launched', 'exited');
    expect(await waitFor(() => running('42.7'), 5_000)).toBe(true);
    child.kill('SIGKILL');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(running('42.7')).toBe(true);
  });
});
