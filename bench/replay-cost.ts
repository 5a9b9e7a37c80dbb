/**
 * What the workflow code alone costs per turn: a run's history replayed in this process (one replay worker, the SDK's
 * sandbox included), as CPU ms and as promises created in the workflow's context. The SDK's promise hook captures a
 * source-mapped stack trace for every such promise (its stack-trace query), so promises are the workflow code's main
 * CPU cost after the SDK's fixed cost per activation.
 *
 * Used by the overhead section (bench/overhead.ts). Also a command, to measure or profile a change of workflow code
 * without the whole bench, from histories the bench saved under BENCH_CPU_PROF (keel-history.json, floor-history.json):
 *
 *   npx tsx bench/replay-cost.ts <history.json> [<history.json> …]   (env: REPLAY_TURNS=20, REPLAY_PROF=<dir>)
 *
 * prints CPU ms and promises per turn for each, bundling workflows/ (the Keel workflows) and bench/workflows.ts (the
 * floor) as the bench does; with REPLAY_PROF a V8 CPU profile of each history's replays is written there.
 */
import { randomUUID } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promiseHooks } from 'node:v8';
import { Worker } from '@temporalio/worker';

/** A history as the bench saves it: the workflow id it ran under, and the history (proto JSON). */
export interface SavedHistory {
  workflowId: string;
  workflowType: string;
  turns: number;
  history: unknown;
}

export interface ReplayCost {
  /** CPU ms per turn of replaying the history (start-up of the replay worker subtracted). */
  cpuMs: number;
  /** Promises created in the workflow's context per turn. */
  promises: number;
}

type History = Parameters<typeof Worker.runReplayHistory>[1];

/**
 * CPU ms per turn of replaying one run's history 20 times (one replay worker; its start-up subtracted), and the
 * promises the workflow code creates per turn. `profile`: a path to write a V8 CPU profile of 20 further replays to.
 */
export async function replayCost(
  bundlePath: string,
  saved: Pick<SavedHistory, 'workflowId' | 'turns' | 'history'>,
  profile?: string,
): Promise<ReplayCost> {
  const { workflowId, turns } = saved;
  const history = saved.history as History;
  const replay = async (n: number) => {
    const t = process.cpuUsage();
    const copies = Array.from({ length: n }, (_, i) => ({ history, workflowId: `${workflowId}-replay-${i}` }));
    for await (const r of Worker.runReplayHistories(
      { workflowBundle: { codePath: bundlePath }, replayName: `bench-${randomUUID()}` },
      copies,
    )) {
      if (r.error) throw r.error;
    }
    const d = process.cpuUsage(t);
    return (d.user + d.system) / 1000;
  };
  await replay(1);
  const one = await replay(1);
  const many = await replay(21);
  const promises = await workflowPromises(() => replay(5));
  if (profile) await profiled(profile, () => replay(21));
  return { cpuMs: (many - one) / 20 / turns, promises: promises / 5 / turns };
}

/** Replays a history once (one replay worker) and counts the promises its workflow code created. */
export async function replayPromises(bundlePath: string, history: History, workflowId: string): Promise<number> {
  return workflowPromises(async () => {
    await Worker.runReplayHistory(
      { workflowBundle: { codePath: bundlePath }, replayName: `promises-${randomUUID()}` },
      history,
      workflowId,
    );
  });
}

/** Promises created inside workflow sandboxes (another realm's `Promise`) while `fn` runs in this thread. */
async function workflowPromises(fn: () => Promise<unknown>): Promise<number> {
  let promises = 0;
  const stop = promiseHooks.createHook({
    init(p) {
      if (p.constructor !== Promise) promises += 1; // created inside a workflow's sandbox context
    },
  });
  try {
    await fn();
  } finally {
    stop();
  }
  return promises;
}

/** Runs `fn` under the V8 CPU profiler of this thread (replays run in it: the SDK's replay worker is in debug mode). */
async function profiled(path: string, fn: () => Promise<unknown>): Promise<void> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 100 });
    await session.post('Profiler.start');
    await fn();
    const { profile } = await session.post('Profiler.stop');
    writeFileSync(path, JSON.stringify(profile));
  } finally {
    session.disconnect();
  }
}

async function main(files: string[]): Promise<void> {
  const { bundleWorkflowCode, DefaultLogger, Runtime } = await import('@temporalio/worker');
  Runtime.install({
    logger: new DefaultLogger('ERROR'),
    telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
  });
  const { WORKFLOWS_PATH } = await import('../worker/create-worker.js');
  const dir = join(fileURLToPath(new URL('.', import.meta.url)), 'results');
  mkdirSync(dir, { recursive: true });
  const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error: console.error };
  const bundles = new Map<string, string>();
  const bundleFor = async (workflowType: string) => {
    const keel = workflowType !== 'floorWorkflow' && workflowType !== 'naiveWorkflow';
    const path = join(dir, keel ? 'replay-keel.js' : 'replay-bench.js');
    if (!bundles.has(path)) {
      const workflowsPath = keel ? WORKFLOWS_PATH : fileURLToPath(new URL('./workflows.ts', import.meta.url));
      writeFileSync(path, (await bundleWorkflowCode({ workflowsPath, logger: quiet })).code);
      bundles.set(path, path);
    }
    return path;
  };
  const profDir = process.env.REPLAY_PROF;
  if (profDir) mkdirSync(profDir, { recursive: true });
  for (const file of files) {
    const saved = JSON.parse(readFileSync(file, 'utf8')) as SavedHistory;
    const turns = Number(process.env.REPLAY_TURNS ?? saved.turns);
    const profile = profDir ? join(profDir, `replay-${basename(file, '.json')}.cpuprofile`) : undefined;
    const cost = await replayCost(await bundleFor(saved.workflowType), { ...saved, turns }, profile);
    process.stdout.write(
      `${file}: ${cost.cpuMs.toFixed(2)} CPU ms per turn, ${cost.promises.toFixed(1)} promises per turn${profile ? ` (profile: ${profile})` : ''}\n`,
    );
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) await main(process.argv.slice(2));
