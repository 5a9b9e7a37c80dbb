/**
 * The batches guide's "Graded batches and variants" (docs/batches.md, once the README's) as a new user runs it (issue 33
 * item 17): `keel dev` already up in one terminal, the guide's block pasted into another. The block runs against that `keel dev` as written (its scripted
 * models are rule files the worker reads, not `--scripts` of a second `keel dev`), the same command again re-attaches
 * to the batch that succeeded; a batch where every run fails names its first failure, never says the variants "agree",
 * and running it again is refused with the retry command instead of re-attaching to the failed batch. The block's
 * `/tmp/` is a directory of this test's own (the machine is shared); nothing else of it is changed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { freePort } from '../free-port.js';
import { BIN, ROOT, runProcess, stopChild, type CliResult } from './cli-child.js';

/** The first ```sh block under "## Graded batches and variants" of the batches guide (docs/batches.md). */
function readmeBlock(): string {
  const readme = readFileSync(join(ROOT, 'docs', 'batches.md'), 'utf8');
  const section = readme.indexOf('\n## Graded batches and variants\n');
  const start = readme.indexOf('```sh\n', section) + '```sh\n'.length;
  return readme.slice(start, readme.indexOf('```', start));
}

/** What a user reads: stdout without the progress lines (how many there are depends on timing). */
const shown = (r: CliResult) => r.stdout.split('\n').filter((l) => !l.startsWith('progress '));

describe('docs/batches.md "Graded batches and variants" against a running keel dev', () => {
  let dev: ChildProcess;
  let env: NodeJS.ProcessEnv;
  let dir: string;
  let ui: string;
  /** Runs shell text as pasted into a terminal of the project, next to the `keel dev`. */
  const sh = (text: string) => runProcess('/bin/sh', ['-c', text], { cwd: ROOT, env, timeoutMs: 90_000 });

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'keel-readme-graded-'));
    const [port, uiPort] = [await freePort(), await freePort()];
    ui = `http://localhost:${uiPort}/namespaces/default/workflows`;
    env = {
      ...process.env,
      NO_COLOR: '1',
      XDG_CACHE_HOME: join(dir, 'cache'), // its own dev-server records: the CLI finds this keel dev's UI port there
      TEMPORAL_CLI_PATH: await ensureTemporalCli(),
    };
    for (const k of ['TEMPORAL_NAMESPACE', 'KEEL_TASK_QUEUE', 'KEEL_UI_URL', 'TEMPORAL_PROFILE', 'KEEL_MODEL'])
      delete env[k];
    // `keel dev` as the user started it before (plain, no --scripts)
    dev = spawn(process.execPath, [BIN, 'dev', '--port', String(port), '--ui-port', String(uiPort), '--in-memory'], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    await new Promise<void>((resolve, reject) => {
      dev.stdout!.on('data', (d: Buffer) => {
        out += d.toString();
        if (out.includes('Ctrl-C to stop\n')) resolve();
      });
      dev.once('exit', (code) => reject(new Error(`keel dev exited ${code}: ${out}`)));
    });
    env.TEMPORAL_ADDRESS = `localhost:${port}`; // the other terminal reaches it as `keel dev`'s Try: line says
  }, 120_000);
  afterAll(async () => {
    if (dev) await stopChild(dev, 'SIGINT');
  });

  it('runs as written: terse 6/6, chatty 2/6, variants disagree on tasks 0 and 2; again: re-attaches', async () => {
    const block = readmeBlock();
    expect(block).not.toMatch(/keel dev/); // a block a user pastes beside a running keel dev must not start another
    const r = await sh(block.replaceAll('/tmp/', `${dir}/`));
    expect(r.stderr.replace(/^npm warn .*\n/gm, '')).toBe('');
    expect(r.code).toBe(0);
    const id = /^batch (keel-batch-[0-9a-f]{16}) · 12 tasks · concurrency 8$/m.exec(r.stdout)?.[1];
    expect(id, r.stdout).toBeDefined();
    expect(shown(r)).toEqual([
      `batch ${id} · 12 tasks · concurrency 8`,
      `Temporal UI: ${ui}/${id}`,
      expect.stringMatching(
        /^✔ 12\/12 done · 0 failed · 0 tokens · \$0\.0000 · [^·]+ m?s(?: · \d+ tasks\/min)? · concurrency 8 · continued-as-new 0×$/,
      ),
      'variant  runs  passed  pass rate      pass@2  mean score     cost  cost/pass  turns  duration',
      expect.stringMatching(
        /^terse {7}6 {5}6\/6 {5}100\.0% {2}3\/3 100\.0% {7}1\.000 {2}\$0\.0000 {4}\$0\.0000 {6}6 +\d+\.\ds$/,
      ),
      expect.stringMatching(
        /^chatty {6}6 {5}2\/6 {6}33\.3% {3}1\/3 33\.3% {7}0\.333 {2}\$0\.0000 {4}\$0\.0000 {6}6 +\d+\.\ds$/,
      ),
      'variants disagree on tasks: 0, 2',
      `Results: ${dir}/results.jsonl`,
      `Temporal UI: ${ui}/${id}`,
      '',
    ]);
    const lines = readFileSync(join(dir, 'results.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { variant: string; task: number; repeat: number; grade: { pass: boolean } });
    expect(lines.map((l) => `${l.variant} ${l.task} r${l.repeat} ${l.grade.pass}`).sort()).toEqual(
      ['terse', 'chatty']
        .flatMap((v) => [0, 1, 2].flatMap((t) => [0, 1].map((j) => `${v} ${t} r${j} ${v === 'terse' || t === 1}`)))
        .sort(),
    );

    // the same block again: the batch succeeded, so it re-attaches and prints the same table
    const again = await sh(block.replaceAll('/tmp/', `${dir}/`));
    expect(again.code).toBe(0);
    expect(shown(again).slice(0, 2)).toEqual([
      `These tasks already started batch ${id} (completed): attaching to it. Give --id <new id> to run them again.`,
      `batch ${id} · 12 tasks · concurrency 8`,
    ]);
    expect(shown(again)).toContain('variants disagree on tasks: 0, 2');
  }, 180_000);

  it('every run failing (the models 0.6.2 named, unknown to this keel dev): the first failure, no "agree"; again: refused with the retry', async () => {
    const block = readmeBlock()
      .replaceAll('/tmp/', `${dir}/`)
      .replace(/scripted\/\/\S+\/(terse|chatty)\.json/g, 'scripted/$1');
    expect(block).toContain('--variant terse:model=scripted/terse --variant chatty:model=scripted/chatty,');
    const r = await sh(block);
    expect(r.code).toBe(1);
    const id = /^batch (keel-batch-[0-9a-f]{16}) · 12 tasks · concurrency 8$/m.exec(r.stdout)?.[1];
    expect(id, r.stdout).toBeDefined();
    const out = shown(r);
    expect(out.slice(0, 2)).toEqual([`batch ${id} · 12 tasks · concurrency 8`, `Temporal UI: ${ui}/${id}`]);
    expect(out[2]).toMatch(/^✘ 0\/12 done · 12 failed · 0 tokens · /);
    expect(out[3]).toMatch(
      new RegExp(
        `^First failure \\(${id}-terse-0-r0\\): InvalidAgentInput: Invalid AgentRunInput: model: Unknown scripted model "scripted/terse"\\.`,
      ),
    );
    expect(out.slice(5, 8)).toEqual([
      expect.stringMatching(/^terse {7}6 {5}0\/6 {7}0\.0% {2}0\/3 0\.0% /),
      expect.stringMatching(/^chatty {6}6 {5}0\/6 {7}0\.0% {2}0\/3 0\.0% /),
      'no run of any variant passed: nothing to compare',
    ]);

    // after the fix, the same command is not re-attached to the failed batch: it says how to run the tasks again
    const again = await sh(block);
    expect({ ...again, stderr: again.stderr.replace(/^npm warn .*\n/gm, '') }).toEqual({
      code: 2,
      stdout: '',
      stderr:
        `keel: Batch ${id} already ran (completed: 0/12 done · 12 failed); a batch id names one batch, so it is not started again.\n` +
        `Run the tasks without a result again: npx keel batch retry ${id}\n` +
        'Or give --id <new id> to run all the tasks again.\n',
    });
  }, 180_000);
});
