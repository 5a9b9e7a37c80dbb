/**
 * Section 13, first run (issue 35 item 9): from a fresh Node process to its first completed 2-turn run (a tool call,
 * then the answer), phase by phase — Node's boot, importing `keel/worker` and `keel/client`, `createAgentWorker` (the
 * workflow bundle: read or built), `run()` until `ready()` (polling, the build made current), the client's
 * connection, the run — each in a process of its own (bench/first-run-child.mjs) on the bench's dev server:
 *
 * - `package`: the compiled package as `npm pack` ships it (dist/, built first by scripts/build.mjs unless
 *   BENCH_FIRSTRUN_BUILD=0), on plain Node: a consumer's worker, which loads the prebuilt workflow bundle;
 * - `source, bundle cache empty`: the sources under tsx with an empty workflow bundle cache (worker/bundle-cache.ts): a
 *   fresh checkout's first `npm run demo` or `keel dev`, which bundles workflows/;
 * - `source, bundle cache warm`: the same again, the bundle read from the cache.
 *
 * Target: the package case ≤ 5 s. min(BENCH_ROUNDS, 3) rounds, the cases interleaved.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ROUNDS, type Bench } from './context.js';
import { fmt, summarize, type Summary } from './stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CHILD = fileURLToPath(new URL('./first-run-child.mjs', import.meta.url));
/** The child's marks, in order: each phase ends at its mark (ms since the process started). */
export const FIRST_RUN_PHASES = [
  ['start', 'Node boot'],
  ['importWorker', 'import keel/worker'],
  ['importClient', 'import keel/client'],
  ['createWorker', 'createAgentWorker'],
  ['ready', 'run() until ready()'],
  ['connectClient', 'client connect'],
  ['run', 'the 2-turn run'],
] as const;
type Mark = (typeof FIRST_RUN_PHASES)[number][0];

/** A package's first run must end within this many ms of its process's start. */
export const FIRST_RUN_TARGET_MS = 5000;

export interface FirstRunCase {
  name: string;
  /** ms each phase took (FIRST_RUN_PHASES order). */
  phasesMs: Record<Mark, Summary>;
  /** ms from the process's start to the run's result. */
  totalMs: Summary;
  /** The process's CPU ms until then. */
  cpuMs: Summary;
}

export interface FirstRunResult {
  rounds: number;
  cases: FirstRunCase[];
}

interface Case {
  name: string;
  args: string[];
  entries: { worker: string; client: string };
  env: () => Record<string, string>;
}

export async function firstRunSection(bench: Bench): Promise<FirstRunResult> {
  if (process.env.BENCH_FIRSTRUN_BUILD !== '0' || !existsSync(join(ROOT, 'dist/workflow-bundle.js'))) {
    bench.log('firstrun: building dist/ (scripts/build.mjs), as npm pack does');
    const built = spawnSync(process.execPath, [join(ROOT, 'scripts/build.mjs')], { stdio: 'inherit' });
    if (built.status !== 0) throw new Error('firstrun: scripts/build.mjs failed');
  }
  const url = (path: string) => pathToFileURL(join(ROOT, path)).href;
  let cacheDir = '';
  const cases: Case[] = [
    {
      name: 'package',
      args: [],
      entries: { worker: url('dist/worker.js'), client: url('dist/client.js') },
      env: () => ({}),
    },
    {
      name: 'source, bundle cache empty',
      args: ['--import', 'tsx'],
      entries: { worker: url('worker.ts'), client: url('client.ts') },
      env: () => ({ KEEL_WORKFLOW_BUNDLE_CACHE: (cacheDir = mkdtempSync(join(tmpdir(), 'keel-bench-bundles-'))) }),
    },
    {
      name: 'source, bundle cache warm',
      args: ['--import', 'tsx'],
      entries: { worker: url('worker.ts'), client: url('client.ts') },
      env: () => ({ KEEL_WORKFLOW_BUNDLE_CACHE: cacheDir }),
    },
  ];
  const rounds = Math.min(ROUNDS, 3);
  const samples = new Map<string, Record<string, number>[]>(cases.map((c) => [c.name, []]));
  try {
    for (let round = 1; round <= rounds; round++) {
      for (const c of cases) {
        const marks = await firstRun(bench.server.address, c);
        samples.get(c.name)!.push(marks);
        bench.log(`firstrun round ${round}, ${c.name}: ${fmt(marks.run / 1000)} s to the run's result`);
      }
      if (cacheDir) rmSync(cacheDir, { recursive: true, force: true });
    }
  } finally {
    if (cacheDir) rmSync(cacheDir, { recursive: true, force: true });
  }
  return { rounds, cases: cases.map((c) => summarizeCase(c.name, samples.get(c.name)!)) };
}

function summarizeCase(name: string, runs: Record<string, number>[]): FirstRunCase {
  const phasesMs = {} as Record<Mark, Summary>;
  FIRST_RUN_PHASES.forEach(([mark], i) => {
    const previous = i === 0 ? undefined : FIRST_RUN_PHASES[i - 1][0];
    phasesMs[mark] = summarize(runs.map((r) => r[mark] - (previous ? r[previous] : 0)));
  });
  return { name, phasesMs, totalMs: summarize(runs.map((r) => r.run)), cpuMs: summarize(runs.map((r) => r.cpuMs)) };
}

/** Runs the child once for `c`; resolves with its marks (ms since its start) and CPU ms. */
function firstRun(address: string, c: Case): Promise<Record<string, number>> {
  const env = {
    ...process.env,
    ...c.env(),
    TEMPORAL_ADDRESS: address,
    KEEL_TASK_QUEUE: `firstrun-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
    KEEL_FIRSTRUN_WORKER: c.entries.worker,
    KEEL_FIRSTRUN_CLIENT: c.entries.client,
  };
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...c.args, CHILD], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d));
    child.stderr.on('data', (d: Buffer) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const last = out.trim().split('\n').at(-1) ?? '';
      if (code === 0 && last.startsWith('{')) resolve(JSON.parse(last) as Record<string, number>);
      else reject(new Error(`firstrun ${c.name}: the child exited with ${code}\n${err.slice(-2000)}`));
    });
  });
}

/** The report's rows: per case, the total and where it went (medians). */
export function firstRunRows(r: FirstRunResult): string[][] {
  const rows: string[][] = [];
  for (const c of r.cases) {
    const phases = FIRST_RUN_PHASES.map(([mark, label]) => `${label} ${fmt(c.phasesMs[mark].median / 1000)}`).join(
      ', ',
    );
    const target = c.name === 'package' ? `≤ ${FIRST_RUN_TARGET_MS / 1000} s` : '';
    const met = c.name === 'package' ? (c.totalMs.median <= FIRST_RUN_TARGET_MS ? 'met' : '**missed**') : '';
    rows.push([
      '13 first run',
      `${c.name}: s from process start to a completed 2-turn run (${r.rounds} rounds; medians: ${phases}; CPU ${fmt(c.cpuMs.median / 1000)} s)`,
      fmt(c.totalMs.median / 1000),
      target,
      met,
    ]);
  }
  return rows;
}
