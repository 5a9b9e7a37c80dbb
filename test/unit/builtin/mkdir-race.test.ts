/**
 * Issue 33 item 7: `write` creates the missing parents of `a/b/c/file` while a parallel `bash` flips `a` between a
 * real directory and a symlink to a host directory. No directory (or file) may ever be created outside the
 * workspace, and nothing outside may be removed. A child process flips the name (a bounded loop that stops by itself)
 * while `write` runs 300 times; on 0.6.2 directories were left in the host directory.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { run, tempDir, tools } from './helpers.js';

/** Flips `name` between an empty directory and a symlink to `target` until `stop` exists or `max` flips were made. */
const FLIPPER = `
const fs = require('node:fs');
const [name, target, stop, max] = process.argv.slice(1);
let flips = 0;
for (; flips < Number(max) && !fs.existsSync(stop); flips++) {
  try { fs.rmSync(name, { recursive: true, force: true }); fs.symlinkSync(target, name); } catch {}
  try { fs.rmSync(name, { recursive: true, force: true }); fs.mkdirSync(name); } catch {}
}
process.stdout.write(String(flips));
`;

describe('write creating parent directories while a component flips to a symlink outside', () => {
  it('300 writes of a/b/c/file while a flips: nothing is created outside the workspace', async () => {
    const ws = tempDir('keel-mkdir-race-ws-');
    const outside = tempDir('keel-mkdir-race-out-');
    const control = tempDir('keel-mkdir-race-stop-');
    const t = tools(ws);
    const child = spawn(
      process.execPath,
      ['-e', FLIPPER, path.join(ws, 'a'), outside, path.join(control, 'stop'), '2000000'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const done = new Promise<number>((resolve) => child.on('close', () => resolve(Number(out))));

    const writes = { done: 0, refused: 0 };
    try {
      for (let i = 0; i < 300; i++) {
        try {
          await run(t.write, { path: 'a/b/c/file', content: `round ${i}\n` });
          writes.done++;
        } catch {
          // refused (a component was a symlink out of the workspace, or vanished meanwhile): fine
          writes.refused++;
        }
      }
    } finally {
      writeFileSync(path.join(control, 'stop'), '');
    }
    const flips = await done;
    expect(flips).toBeGreaterThan(0);
    expect(existsSync(outside)).toBe(true);
    expect(readdirSync(outside)).toEqual([]);
    expect(writes.done + writes.refused).toBe(300);
    console.info(`[mkdir-race] ${flips} flips; writes ${JSON.stringify(writes)}`);
  }, 120_000);
});
