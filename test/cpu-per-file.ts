// With KEEL_TEST_CPU=<dir>: each test file appends one line to <dir>/cpu.jsonl — its CPU seconds (this test process,
// and the child processes it started and reaped: CLI commands, child workers, servers), read from /proc/self/stat at
// the file's start and end. `node scripts/test-cpu.mjs <dir>` sums them. The phases are CPU-bound on 2 cores, so a
// file's CPU, not its wall time, is what it costs the whole run (docs/development.md#test-run). Linux only.
import { appendFileSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, expect } from 'vitest';

const dir = process.env.KEEL_TEST_CPU;

/** [own, children] CPU seconds of this process: utime+stime and cutime+cstime (clock ticks of 1/100 s). */
function cpu(): [number, number] {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  // after the command name: field 3 is state, so utime (14) is index 11
  return [(f[11] + f[12]) / 100, (f[13] + f[14]) / 100];
}

if (dir && process.platform === 'linux') {
  const start = cpu();
  const wall = performance.now();
  afterAll(() => {
    const end = cpu();
    const file = expect.getState().testPath?.replace(process.cwd() + '/', '') ?? '?';
    mkdirSync(dir, { recursive: true });
    appendFileSync(
      join(dir, 'cpu.jsonl'),
      JSON.stringify({
        file,
        own: +(end[0] - start[0]).toFixed(2),
        children: +(end[1] - start[1]).toFixed(2),
        wall: +((performance.now() - wall) / 1000).toFixed(1),
      }) + '\n',
    );
  });
}
