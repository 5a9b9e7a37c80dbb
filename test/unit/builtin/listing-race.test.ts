/**
 * Issue 33 item 7: a directory of the workspace that a parallel `bash` flips between a real directory and a symlink to
 * a host directory must never make `ls` or `find` (its Node walk, what fd 8.6 falls back to outside git trees) list
 * the host directory. A child process flips the name (a bounded loop that stops by itself) while `ls` and `find` run
 * 200 times each; on 0.6.2 some rounds listed the host directory's file.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { run, tempDir, text, tools } from './helpers.js';

/** Flips `name` between a directory holding `inside.txt` and a symlink to `target` until `stop` exists or `max` flips. */
const FLIPPER = `
const fs = require('node:fs');
const [name, target, stop, max] = process.argv.slice(1);
let flips = 0;
for (; flips < Number(max) && !fs.existsSync(stop); flips++) {
  try { fs.rmSync(name, { recursive: true, force: true }); fs.symlinkSync(target, name); } catch {}
  try { fs.rmSync(name, { recursive: true, force: true }); fs.mkdirSync(name); fs.writeFileSync(name + '/inside.txt', ''); } catch {}
}
process.stdout.write(String(flips));
`;

describe('ls and find against a directory flipping to a symlink outside', () => {
  it('200 ls and 200 find calls while the directory flips: the host directory is never listed', async () => {
    const ws = tempDir('keel-list-race-ws-');
    const outside = tempDir('keel-list-race-out-');
    writeFileSync(path.join(outside, 'SECRET-outside.txt'), 'x');
    mkdirSync(path.join(ws, 'd'));
    writeFileSync(path.join(ws, 'd', 'inside.txt'), '');
    const t = tools(ws, { useExternalSearch: false });
    const child = spawn(
      process.execPath,
      ['-e', FLIPPER, path.join(ws, 'd'), outside, path.join(outside, 'stop'), '2000000'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    const done = new Promise<number>((resolve) => child.on('close', () => resolve(Number(out))));

    const leaks = { ls: 0, find: 0 };
    const answered = { ls: 0, find: 0 };
    try {
      for (let i = 0; i < 200; i++) {
        for (const [name, tool, args] of [
          ['ls', t.ls, { path: 'd' }],
          ['find', t.find, { pattern: '*.txt' }],
        ] as const) {
          try {
            const body = text(await run(tool, args));
            answered[name]++;
            if (body.includes('SECRET-outside')) leaks[name]++;
          } catch {
            // refused (the name was a symlink out of the workspace, or changed while opened): fine
          }
        }
      }
    } finally {
      writeFileSync(path.join(outside, 'stop'), '');
    }
    const flips = await done;
    expect(flips).toBeGreaterThan(0);
    expect(leaks).toEqual({ ls: 0, find: 0 });
    // the tools answered at all (not refused every time)
    expect(answered.find).toBeGreaterThan(0);
  }, 120_000);
});
