/**
 * examples/ as the README and the guides use them: examples/calc.ts (its own task queue, the calc tool, the scripted
 * rules file), examples/sub-agents.ts, examples/typed-output.ts (docs/runs.md "Typed results").
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, inject, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('examples/', () => {
  it('`npx tsx examples/calc.ts` runs the calc tool through the scripted rules and prints the answer', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') };
    const { stdout, stderr } = await promisify(execFile)(process.execPath, ['--import', 'tsx', 'examples/calc.ts'], {
      cwd: ROOT,
      env,
      timeout: 90_000,
    });
    expect(stdout).toBe('completed after 2 turns: 12*8 = 96.\n');
    expect(stderr).toBe('');
  });

  it('`npx tsx examples/typed-output.ts` returns the typed output after one repair', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') };
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'examples/typed-output.ts'],
      { cwd: ROOT, env, timeout: 90_000 },
    );
    expect(stdout).toBe('completed after 1 repair(s): high — Checkout fails for every EU customer.\n');
    expect(stderr).toBe('');
  });

  it('`npx tsx examples/sub-agents.ts` runs three sub-agent calls as child runs and prints their answers', async () => {
    const env = { ...process.env, TEMPORAL_ADDRESS: inject('temporalAddress') };
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'examples/sub-agents.ts'],
      { cwd: ROOT, env, timeout: 90_000 },
    );
    expect(stdout).toBe(
      [
        'completed: Summary: durable loops, durable tools, and 3 runtimes compared.',
        '  call_1: Its history is recorded, so it resumes where it stopped.',
        '  call_2: Activities do the I/O, retried by Temporal.',
        '  call_3: {"count": 3}',
        '',
      ].join('\n'),
    );
    expect(stderr).toBe('');
  });
});
