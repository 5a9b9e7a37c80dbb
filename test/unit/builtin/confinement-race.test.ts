/**
 * Issue 10 item 5: a name that flips between a regular file and a symlink to outside the workspace must never let a
 * read return the outside file or a write change it. A child process flips the name (a bounded loop that stops by
 * itself) while `read` and `write` run 200 times each.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { run, tempDir, text, tools } from './helpers.js';

/** Flips `name` between a regular file and a symlink to `target` until `stop` exists or `max` flips were made. */
const FLIPPER = `
const fs = require('node:fs');
const [name, target, stop, max] = process.argv.slice(1);
let flips = 0;
for (; flips < Number(max) && !fs.existsSync(stop); flips++) {
  try { fs.rmSync(name, { force: true }); fs.symlinkSync(target, name); } catch {}
  try { fs.rmSync(name, { force: true }); fs.writeFileSync(name, 'inside\\n'); } catch {}
}
process.stdout.write(String(flips));
`;

function startFlipper(name: string, target: string, stop: string) {
  const child = spawn(process.execPath, ['-e', FLIPPER, name, target, stop, '2000000'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  const done = new Promise<number>((resolve) => child.on('close', () => resolve(Number(out))));
  return { done, stop: () => writeFileSync(stop, '') };
}

describe('confinement holds against a name flipping to a symlink outside', () => {
  it('200 reads and 200 writes while the name flips: zero leaks', async () => {
    const ws = tempDir('keel-race-ws-');
    const outside = tempDir('keel-race-out-');
    const victim = path.join(outside, 'victim.txt');
    writeFileSync(victim, 'SECRET outside\n');
    const name = path.join(ws, 'flip.txt');
    writeFileSync(name, 'inside\n');
    const t = tools(ws);
    const flipper = startFlipper(name, victim, path.join(outside, 'stop'));

    const reads = { leaked: 0, inside: 0, refused: 0 };
    const writes = { leaked: 0, done: 0, refused: 0 };
    try {
      for (let i = 0; i < 200; i++) {
        try {
          const body = text(await run(t.read, { path: 'flip.txt' }));
          if (body.includes('SECRET')) reads.leaked++;
          else reads.inside++;
        } catch {
          reads.refused++;
        }
        try {
          await run(t.write, { path: 'flip.txt', content: `model ${i}\n` });
          writes.done++;
        } catch {
          writes.refused++;
        }
        if (readFileSync(victim, 'utf8') !== 'SECRET outside\n') {
          writes.leaked++;
          writeFileSync(victim, 'SECRET outside\n');
        }
      }
    } finally {
      flipper.stop();
    }
    const flips = await flipper.done;
    expect(flips).toBeGreaterThan(0);
    expect({ reads: reads.leaked, writes: writes.leaked }).toEqual({ reads: 0, writes: 0 });
    expect(reads.inside + reads.refused).toBe(200);
    expect(writes.done + writes.refused).toBe(200);
    expect(existsSync(victim)).toBe(true);
    console.info(`[confinement-race] ${flips} flips; reads ${JSON.stringify(reads)}; writes ${JSON.stringify(writes)}`);
  });
});
