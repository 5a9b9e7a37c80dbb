/**
 * Issue 10 item 8: a process that started the dev server (`keel dev`, or anything calling `startDevServer`) and is
 * killed with SIGKILL takes the server with it: the server process is gone and its port is free again.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';

const CHILD = fileURLToPath(new URL('./fixtures/dev-server-child.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const alive = (pid: number) => existsSync(`/proc/${pid}`) && !/\) Z /.test(safeRead(`/proc/${pid}/stat`));
function safeRead(path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    return '';
  }
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
  });
}

describe.skipIf(process.platform !== 'linux')('dev server lifeline', () => {
  it('SIGKILL of the process that started the dev server: the server dies too and frees its port', async () => {
    // one process (tsx as a loader, not its CLI wrapper), so the SIGKILL hits the process that started the server
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    });
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    await vi.waitFor(() => expect(out).toContain('\n'), { timeout: 60_000, interval: 50 });
    const { address, serverPids } = JSON.parse(out.trim()) as { address: string; serverPids: number[] };
    const port = Number(address.split(':').pop());
    expect(serverPids).toHaveLength(1);
    expect(alive(serverPids[0])).toBe(true);
    expect(await portFree(port)).toBe(false);

    child.kill('SIGKILL');
    await vi.waitFor(() => expect(alive(serverPids[0])).toBe(false), { timeout: 10_000, interval: 50 });
    await vi.waitFor(async () => expect(await portFree(port)).toBe(true), { timeout: 10_000, interval: 50 });
  });
});
