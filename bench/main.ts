/**
 * `npm run bench`: Keel's performance against the engine floor and Pi in process, on one Temporal dev server.
 *
 * 1. Per-turn overhead: 20-turn scripted runs (one no-op tool call per turn) through `agentWorkflow`, the engine floor
 *    (`floorWorkflow`: one model + one tool activity per turn, no logic), floor variants that add one Keel extra each
 *    (heartbeat, query, search-attribute upsert) and Pi's in-process `agentLoop`, interleaved; CPU per turn of the
 *    worker process and the server; where a Keel turn's time goes (history timestamps, queries, workflow-code replay).
 * 2. History growth: one 500-turn run whose tool results are 20 KiB each, and the naive full-transcript loop.
 * 3. Throughput: 200 concurrent 10-turn runs on one worker process, and on two, interleaved (run last: as many rounds
 *    as the time budget allows, at least one); the engine floor's batch when it fits.
 * 4. Memory: worker RSS with 0, 100 and 500 sessions parked waiting for a follow-up, and a minimal parked workflow.
 *
 * Prints a Markdown table (stdout) and writes bench/results/latest.json (git-ignored). Progress goes to stderr.
 * Environment: BENCH_ROUNDS (default 5), BENCH_ONLY (comma list of overhead,history,memory,throughput),
 * BENCH_BUDGET_S (default 540), BENCH_STOCK_SERVER=1 (dev server without the transfer-queue setting below),
 * BENCH_CPU_PROF=<dir> (V8 CPU profiles of the worker processes), KEEL_BENCH_PI_AGENT_CORE (path to pi-agent-core's
 * dist/index.js when the package is not installed).
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promiseHooks } from 'node:v8';
import { fileURLToPath } from 'node:url';
import { Client, Connection, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { AgentClient } from '../client/agent-client.js';
import { startDevServer } from '../client/dev-server.js';
import type { AgentRunInput, AgentRunResult } from '../common/run.js';
import { ensureTemporalCli } from '../scripts/temporal-cli.mjs';
import { WORKFLOWS_PATH } from '../worker/create-worker.js';
import { BLOB_KB, QUEUE } from './fixtures.js';
import { bytesByEventType, failureOf, firstSuggestion, fetchChain, timeBreakdown, turnPoints, type Chain, type TurnPoint } from './history.js';
import type { FloorOptions } from './floor-workflow.js';
import type { NaiveInput } from './naive-workflow.js';
import { loadPiAgentCore, PI_AGENT_CORE, PI_AGENT_CORE_VERSION, runPiLoop } from './pi-loop.js';
import { fmt, fmtBytes, fmtSummary, pairedRatio, percentile, summarize, type Summary } from './stats.js';
import { WorkerProcess } from './workers.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
const ONLY = new Set((process.env.BENCH_ONLY ?? 'overhead,history,throughput,memory').split(',').map((s) => s.trim()));
const OVERHEAD_TURNS = 20;
const HISTORY_TURNS = 500;
const HISTORY_POINTS = [10, 100, 250, 500];
const THROUGHPUT_RUNS = 200;
const THROUGHPUT_TURNS = 10;
const SESSION_COUNTS = [0, 100, 500];
/** Parked minimal workflows for the engine floor's per-workflow memory (its slope between the last two points). */
const FLOOR_PARKED = [0, 100, 300];
/** Whole-bench time budget: throughput (last) runs as many rounds as fit, at least one. */
const BUDGET_MS = Number(process.env.BENCH_BUDGET_S ?? 540) * 1000;
/** Floor variants that add Keel's per-turn extras one at a time (bench/floor-workflow.ts). */
const FLOOR_VARIANTS: { name: string; opts: FloorOptions }[] = [
  { name: 'floor + heartbeat at activity start', opts: { heartbeat: true } },
  { name: 'floor + 1 query per activity', opts: { query: true } },
  { name: 'floor + search-attribute upsert per turn', opts: { upsert: true } },
  { name: 'floor + all three', opts: { heartbeat: true, query: true, upsert: true } },
];
const PI_INSTALL = `npm install --save-dev --save-exact ${PI_AGENT_CORE}@${PI_AGENT_CORE_VERSION}`;

const started = performance.now();
const loadAtStart = loadavg();
const log = (s: string) => process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(1).padStart(5)}s] ${s}\n`);

// ---------------------------------------------------------------------------------------------------------------------
// Setup: one dev server, the two workflow bundles, the main worker process.

Runtime.install({ logger: new DefaultLogger('ERROR'), telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
const cliPath = await ensureTemporalCli({ log });
const temporalVersion = execFileSync(cliPath, ['--version'], { encoding: 'utf8' }).trim();
/**
 * The dev server runs one history shard, whose transfer queue (which hands workflow and activity tasks to matching)
 * reads at most `history.transferProcessorMaxPollRPS` = 20 times a second by default: every task dispatch then waits
 * up to 50 ms, ~200 ms per turn whatever the workflow does. Raised here so the loop's own costs are visible;
 * BENCH_STOCK_SERVER=1 keeps the stock settings.
 */
const SERVER_ARGS = [...(process.env.BENCH_STOCK_SERVER ? [] : ['--dynamic-config-value', 'history.transferProcessorMaxPollRPS=1000']), '--log-level', 'error'];
const server = await startDevServer({ log, extraArgs: SERVER_ARGS });
const address = server.address;
// History pages of the naive run hold events of several MB each.
const connection = await Connection.connect({ address, channelArgs: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 } });
const client = new Client({ connection });
const keel1 = new AgentClient(client, QUEUE.keel1);
const keel2 = new AgentClient(client, QUEUE.keel2);

const bundleDir = mkdtempSync(join(tmpdir(), 'keel-bench-'));
const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn: (m: string) => log(`[bundler] ${m}`), error: (m: string) => log(`[bundler] ${m}`) };
const keelBundlePath = join(bundleDir, 'keel.js');
const benchBundlePath = join(bundleDir, 'bench.js');
writeFileSync(keelBundlePath, (await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quiet })).code);
writeFileSync(benchBundlePath, (await bundleWorkflowCode({ workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)), logger: quiet })).code);
log(`bundles in ${bundleDir}`);

const workers: WorkerProcess[] = [];
function spawnWorker(name: string, keelQueues: string[], benchQueue: string | undefined, exposeGc = false): WorkerProcess {
  const w = WorkerProcess.spawn(
    name,
    { address, keelBundlePath, keelQueues, identity: `bench-${name}`, ...(benchQueue ? { benchBundlePath, benchQueue } : {}) },
    { exposeGc },
  );
  workers.push(w);
  return w;
}
const main = spawnWorker('main', [QUEUE.keel1, QUEUE.keel2], QUEUE.bench);
log(`worker process main pid ${await main.ready}`);

const results: Record<string, unknown> = {};
let exitCode = 0;
try {
  if (ONLY.has('overhead')) results.overhead = await overheadSection();
  if (ONLY.has('history')) results.history = await historySection();
  if (ONLY.has('memory')) results.memory = await memorySection();
  if (ONLY.has('throughput')) results.throughput = await throughputSection();
} catch (err) {
  exitCode = 1;
  log(`FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
} finally {
  await Promise.allSettled(workers.map((w) => w.stop()));
  await connection.close().catch(() => {});
  await server.shutdown().catch(() => {});
  rmSync(bundleDir, { recursive: true, force: true });
}

const totalSeconds = (performance.now() - started) / 1000;
const report = {
  date: new Date().toISOString(),
  machine: { cpus: availableParallelism(), cpuModel: cpus()[0]?.model, node: process.version, loadAverageAtStart: loadAtStart, loadAverageAtEnd: loadavg() },
  temporalCli: temporalVersion,
  sdk: JSON.parse(readFileSync(join(ROOT, 'node_modules/@temporalio/worker/package.json'), 'utf8')).version as string,
  serverArgs: SERVER_ARGS,
  rounds: ROUNDS,
  totalSeconds,
  ...results,
};
mkdirSync(join(ROOT, 'bench/results'), { recursive: true });
writeFileSync(join(ROOT, 'bench/results/latest.json'), `${JSON.stringify(report, null, 2)}\n`);
process.stdout.write(markdown(report));
log(`wrote bench/results/latest.json; total ${totalSeconds.toFixed(0)} s`);
process.exit(exitCode);

// ---------------------------------------------------------------------------------------------------------------------
// Runs

function keelInput(model: string, tools: string[], maxTurns: number, extra: Partial<AgentRunInput> = {}): AgentRunInput {
  return { model: `scripted/${model}`, prompt: 'go', tools, maxTurns, ...extra };
}

/** A Keel run start → result, in ms (client-observed). */
async function keelRun(agent: AgentClient, input: AgentRunInput): Promise<{ ms: number; workflowId: string; result: AgentRunResult }> {
  const workflowId = `bench-keel-${randomUUID()}`;
  const t = performance.now();
  const handle = await agent.start(input, { workflowId });
  const result = await handle.result();
  return { ms: performance.now() - t, workflowId, result };
}

async function floorRun(turns: number, opts: FloorOptions = {}): Promise<{ ms: number; workflowId: string }> {
  const workflowId = `bench-floor-${randomUUID()}`;
  const t = performance.now();
  const handle = await client.workflow.start('floorWorkflow', { taskQueue: QUEUE.bench, workflowId, args: [turns, opts] });
  await handle.result();
  return { ms: performance.now() - t, workflowId };
}

// ---------------------------------------------------------------------------------------------------------------------
// 1. Per-turn overhead

async function overheadSection() {
  log(`overhead: ${OVERHEAD_TURNS}-turn runs, warm-up then ${ROUNDS} rounds of Keel, floor, ${FLOOR_VARIANTS.length} floor variants, Pi`);
  const pi = await loadPiAgentCore();
  if (!pi.core) log(`${PI_AGENT_CORE} not installed (${pi.error}); install with: ${PI_INSTALL}`);
  const input = keelInput('bench-noop', ['noop'], OVERHEAD_TURNS);
  const contenders: { name: string; run: () => Promise<{ ms: number; workflowId: string }> }[] = [
    {
      name: 'keel',
      run: async () => {
        const k = await keelRun(keel1, input);
        if (k.result.turns !== OVERHEAD_TURNS || k.result.status !== 'stopped') throw new Error(`Keel run: ${k.result.status}, ${k.result.turns} turns`);
        return k;
      },
    },
    { name: 'floor', run: () => floorRun(OVERHEAD_TURNS) },
    ...FLOOR_VARIANTS.map((v) => ({ name: v.name, run: () => floorRun(OVERHEAD_TURNS, v.opts) })),
  ];
  for (let i = 0; i < 1; i++) {
    for (const c of contenders) await c.run();
    if (pi.core) for (let j = 0; j < 5; j++) await runPiLoop(pi.core, OVERHEAD_TURNS);
  }
  const serverPid = childPid('temporal');
  const wall = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const workerCpu = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const serverCpu = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const last = new Map<string, string>();
  const piMs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of contenders) {
      const w0 = await main.cpuMs();
      const s0 = procCpuMs(serverPid);
      const x = await c.run();
      workerCpu.get(c.name)!.push((await main.cpuMs()) - w0);
      serverCpu.get(c.name)!.push(procCpuMs(serverPid) - s0);
      wall.get(c.name)!.push(x.ms / OVERHEAD_TURNS);
      last.set(c.name, x.workflowId);
    }
    if (pi.core) {
      const p = await runPiLoop(pi.core, OVERHEAD_TURNS);
      if (p.turns !== OVERHEAD_TURNS) throw new Error(`Pi loop made ${p.turns} turns`);
      piMs.push(p.ms / OVERHEAD_TURNS);
    }
    log(`  round ${r + 1}: ${contenders.map((c) => `${c.name.replace('floor + ', '+')} ${fmt(wall.get(c.name)![r])}`).join(', ')}${pi.core ? `, Pi ${fmt(piMs[r], 3)}` : ''} ms/turn`);
  }
  const keel = wall.get('keel')!;
  const floor = wall.get('floor')!;
  const cpuPerTurn = (name: string) => ({
    workerMs: summarize(workerCpu.get(name)!.map((x) => x / OVERHEAD_TURNS)),
    serverMs: serverPid ? summarize(serverCpu.get(name)!.map((x) => x / OVERHEAD_TURNS)) : null,
  });

  // Profile: what one Keel turn costs in round trips, queries and time, from history timestamps.
  await main.stats(true);
  const profiled = await keelRun(keel1, input);
  const queries = await main.stats(true);
  const perTurn = async (workflowId: string) => {
    const chain = await fetchChain(client, workflowId);
    const b = timeBreakdown(chain.events);
    const turns = OVERHEAD_TURNS;
    return {
      workflowId,
      wallMsPerTurn: b.wallMs / turns,
      eventsPerTurn: chain.events.length / turns,
      workflowTasksPerTurn: b.workflowTasks / turns,
      wftQueueMsPerTurn: b.wftQueueMs / turns,
      wftRunMsPerTurn: b.wftRunMs / turns,
      activities: Object.fromEntries(
        Object.entries(b.activities).map(([name, a]) => [name, { perTurn: a.count / turns, queueMsPerTurn: a.queueMs / turns, runMsPerTurn: a.runMs / turns, runMsEach: a.runMs / a.count }]),
      ),
      otherMsPerTurn: b.otherMs / turns,
      eventsByType: b.eventsByType,
    };
  };
  const profile = {
    keel: await perTurn(profiled.workflowId),
    floor: await perTurn(last.get('floor')!),
    floorVariants: Object.fromEntries(await Promise.all(FLOOR_VARIANTS.map(async (v) => [v.name, await perTurn(last.get(v.name)!)] as const))),
    keelQueriesPerTurn: Object.fromEntries(Object.entries(queries).map(([type, q]) => [type, { perTurn: q.count / OVERHEAD_TURNS, msEach: q.ms / q.count, messagesPerTurn: q.messages / OVERHEAD_TURNS }])),
    /** CPU of the workflow code alone (SDK sandbox included): replaying each history in this process. */
    replayCpuMsPerTurn: {
      keel: await replayCpuPerTurn(keelBundlePath, profiled.workflowId, OVERHEAD_TURNS),
      floor: await replayCpuPerTurn(benchBundlePath, last.get('floor')!, OVERHEAD_TURNS),
    },
  };
  return {
    turns: OVERHEAD_TURNS,
    keelMsPerTurn: summarize(keel),
    floorMsPerTurn: summarize(floor),
    piMsPerTurn: pi.core ? summarize(piMs) : null,
    pi: pi.core ? { from: pi.from, version: pi.version } : { notInstalled: true, error: pi.error, install: PI_INSTALL },
    keelOverFloor: pairedRatio(keel, floor),
    keelOverPi: pi.core ? pairedRatio(keel, piMs) : null,
    cpuPerTurn: { keel: cpuPerTurn('keel'), floor: cpuPerTurn('floor') },
    /** turns/s this machine could sustain if worker + server CPU per turn were the only limit. */
    cpuCeilingTurnsPerSecond: {
      keel: ceiling(cpuPerTurn('keel')),
      floor: ceiling(cpuPerTurn('floor')),
    },
    floorVariants: FLOOR_VARIANTS.map((v) => ({
      name: v.name,
      options: v.opts,
      msPerTurn: summarize(wall.get(v.name)!),
      overFloor: pairedRatio(wall.get(v.name)!, floor),
      cpuPerTurn: cpuPerTurn(v.name),
    })),
    profile,
  };
}

function ceiling(c: { workerMs: Summary; serverMs: Summary | null }): number {
  return (availableParallelism() * 1000) / (c.workerMs.median + (c.serverMs?.median ?? 0));
}

/**
 * CPU ms per turn of replaying one run's history 20 times (one replay worker; its start-up subtracted), and the
 * promises the workflow code creates per turn (the SDK captures a source-mapped stack trace for each one).
 */
async function replayCpuPerTurn(bundlePath: string, workflowId: string, turns: number): Promise<{ cpuMs: number; promises: number }> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const replay = async (n: number) => {
    const t = process.cpuUsage();
    const copies = Array.from({ length: n }, (_, i) => ({ history, workflowId: `${workflowId}-replay-${i}` }));
    for await (const r of Worker.runReplayHistories({ workflowBundle: { codePath: bundlePath }, replayName: `bench-${randomUUID()}` }, copies)) {
      if (r.error) throw r.error;
    }
    const d = process.cpuUsage(t);
    return (d.user + d.system) / 1000;
  };
  await replay(1);
  const one = await replay(1);
  const many = await replay(21);
  let promises = 0;
  const stop = promiseHooks.createHook({
    init(p) {
      if (p.constructor !== Promise) promises += 1; // created inside a workflow's sandbox context
    },
  });
  try {
    await replay(5);
  } finally {
    stop();
  }
  return { cpuMs: (many - one) / 20 / turns, promises: promises / 5 / turns };
}

/** Pid of this process's child whose command is `comm` (the dev server is spawned by the SDK's native bridge). */
function childPid(comm: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (name === comm && ppid === process.pid) return Number(entry);
    } catch {
      // gone
    }
  }
  return undefined;
}

/** User + system CPU of a process, in ms (clock ticks of 10 ms). */
function procCpuMs(pid: number | undefined): number {
  if (!pid) return NaN;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

// ---------------------------------------------------------------------------------------------------------------------
// 2. History growth

async function historySection() {
  log(`history: one ${HISTORY_TURNS}-turn Keel run with ${BLOB_KB} KiB tool results`);
  const t = performance.now();
  const k = await keelRun(keel1, keelInput('bench-blob', ['blob'], HISTORY_TURNS));
  const keelSeconds = (performance.now() - t) / 1000;
  if (k.result.turns !== HISTORY_TURNS) throw new Error(`history run: ${k.result.status} after ${k.result.turns} turns`);
  const chain = await fetchChain(client, k.workflowId);
  const keel = turnPoints(chain, 'callModel', HISTORY_POINTS);
  const keelTime = turnTimes(chain, 'callModel', HISTORY_POINTS);
  log(`  Keel: ${keelSeconds.toFixed(1)} s, ${chain.runs} run(s), ${chain.events.length} events`);
  // Why (not) continue-as-new: Temporal's suggestion, and when the carried transcript passed 1.5 M JSON chars (the
  // transcript's size is estimated from the model and tool activity results, ≈ its JSON; querying the closed run
  // instead would replay its whole history for every page).
  const { chars, carriedCapTurn } = transcriptGrowth(chain);
  const suggestion = firstSuggestion(chain, 'callModel');

  log(`history: the naive loop (full transcript into every model activity), same replies and tool`);
  const naiveId = `bench-naive-${randomUUID()}`;
  const nt = performance.now();
  const handle = await client.workflow.start('naiveWorkflow', {
    taskQueue: QUEUE.bench,
    workflowId: naiveId,
    args: [{ model: 'scripted/bench-blob', prompt: 'go', tools: ['blob'], maxTurns: HISTORY_TURNS } satisfies NaiveInput],
  });
  const outcome = await settleOrStall(handle, 15_000);
  const naiveSeconds = (performance.now() - nt) / 1000;
  const naiveChain = await fetchChain(client, naiveId);
  const seen = turnPoints(naiveChain, 'naiveCallModel', []).turnsSeen;
  const naive = turnPoints(naiveChain, 'naiveCallModel', [...HISTORY_POINTS.filter((p) => p < seen), seen]);
  const lastModelInput = naiveChain.events
    .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'naiveCallModel')
    .map((e) => (e.activityTaskScheduledEventAttributes?.input?.payloads ?? []).reduce((n: number, p) => n + (p.data?.length ?? 0), 0));
  const naiveResult = {
    outcome: outcome.kind,
    failure: outcome.kind === 'completed' ? undefined : (failureOf(naiveChain.events) ?? outcome.message),
    modelCallsScheduled: naive.turnsSeen,
    /** Turns whose tool result was recorded before the run stopped. */
    turnsCompleted: completedTurns(naiveChain, 'naiveCallModel'),
    largestModelInputBytes: Math.max(0, ...lastModelInput),
    historyEvents: naiveChain.events.length,
    historyBytes: naive.points.length ? naive.points[naive.points.length - 1].bytes : 0,
    seconds: naiveSeconds,
    points: naive.points,
  };
  log(`  naive: ${naiveResult.outcome} after ${naiveResult.turnsCompleted} turns: ${naiveResult.failure ?? ''}`);
  const at = (turn: number) => keel.points.find((p) => p.turn === turn);
  return {
    turns: HISTORY_TURNS,
    toolResultKiB: BLOB_KB,
    measure: 'bytes = sum of each HistoryEvent protobuf-encoded (HistoryEvent.encode(e).finish().length) over the whole continue-as-new chain; payloadBytes = sum of payload data bytes in those events',
    keel: {
      seconds: keelSeconds,
      runs: chain.runs,
      continuedAsNew: chain.runs - 1,
      events: chain.events.length,
      points: keel.points,
      msPerTurnAt: keelTime,
      bytesPerTurnByEventType: bytesByEventType(chain, 'callModel', 10, HISTORY_TURNS - 1),
      transcriptJsonChars: chars,
      continueAsNewSuggestedAt: suggestion ?? null,
      transcriptPast1500000CharsAtTurn: carriedCapTurn ?? null,
      perTurnGrowth: (at(500)?.bytesPerTurn ?? NaN) / (at(10)?.bytesPerTurn ?? NaN),
    },
    naive: naiveResult,
  };
}

/** JSON size of the transcript, estimated from the payloads of the model and tool activity results. */
function transcriptGrowth(chain: Chain): { chars: number; carriedCapTurn?: number } {
  const names = new Map<string, string>();
  let chars = 0;
  let turn = 0;
  let carriedCapTurn: number | undefined;
  for (const e of chain.events) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) names.set(String(e.eventId), name);
    if (name === 'callModel') turn += 1;
    const done = e.activityTaskCompletedEventAttributes;
    const activity = done ? names.get(String(done.scheduledEventId)) : undefined;
    if (activity === 'callModel' || activity === 'runToolCall') chars += (done?.result?.payloads ?? []).reduce((n: number, p) => n + (p.data?.length ?? 0), 0);
    if (carriedCapTurn === undefined && chars > 1_500_000) carriedCapTurn = turn;
  }
  return { chars, carriedCapTurn };
}

/** Milliseconds per turn around each point (mean over the 10 turns ending there), from history timestamps. */
function turnTimes(chain: Chain, modelActivity: string, turns: number[]): Record<number, number> {
  const starts = chain.events.flatMap((e) => (e.activityTaskScheduledEventAttributes?.activityType?.name === modelActivity ? [e] : []));
  const t = (e: (typeof chain.events)[number] | undefined) => (e?.eventTime ? Number(e.eventTime.seconds ?? 0) * 1000 + (e.eventTime.nanos ?? 0) / 1e6 : NaN);
  const end = chain.events[chain.events.length - 1];
  const out: Record<number, number> = {};
  for (const turn of turns) {
    if (turn > starts.length) continue;
    const from = Math.max(0, turn - 10);
    out[turn] = (t(turn < starts.length ? starts[turn] : end) - t(starts[from])) / (turn - from);
  }
  return out;
}

/** Turns whose model call completed (the naive run stops mid-turn when its next model input is refused). */
function completedTurns(chain: Chain, modelActivity: string): number {
  const scheduled = new Map<string, string>();
  let n = 0;
  for (const e of chain.events) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) scheduled.set(String(e.eventId), name);
    const done = e.activityTaskCompletedEventAttributes;
    if (done && scheduled.get(String(done.scheduledEventId)) === modelActivity) n += 1;
  }
  return n;
}

/** Waits for the run to close; if its history stops growing for `stallMs` (a workflow task failing over and over), terminates it. */
async function settleOrStall(handle: WorkflowHandle, stallMs: number): Promise<{ kind: 'completed' | 'failed' | 'terminated' | 'stalled'; message?: string }> {
  const result = handle.result().then(
    () => ({ kind: 'completed' as const }),
    (err) => ({ kind: err instanceof WorkflowFailedError && /terminat/i.test(String(err.cause?.message ?? err.message)) ? ('terminated' as const) : ('failed' as const), message: String(err?.cause?.message ?? err?.message) }),
  );
  let lastLength = -1;
  let lastChange = performance.now();
  for (;;) {
    const done = await Promise.race([result, new Promise<undefined>((r) => setTimeout(() => r(undefined), 2000))]);
    if (done) {
      const d = await handle.describe();
      return d.status.name === 'TERMINATED' ? { kind: 'terminated', message: 'message' in done ? done.message : undefined } : done;
    }
    const d = await handle.describe();
    if (d.historyLength !== lastLength) {
      lastLength = d.historyLength;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > stallMs) {
      const history = await handle.fetchHistory();
      const message = failureOf(history.events ?? []);
      await handle.terminate('bench: no progress (stuck workflow task)');
      return { kind: 'stalled', message };
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// 3. Throughput

async function throughputSection() {
  log(`throughput: ${THROUGHPUT_RUNS} concurrent ${THROUGHPUT_TURNS}-turn runs, 1 worker process vs 2, warm-up then up to ${ROUNDS} rounds within the time budget`);
  const second = spawnWorker('second', [QUEUE.keel2], undefined);
  log(`worker process second pid ${await second.ready}`);
  const serverPid = childPid('temporal');
  if (!ONLY.has('overhead')) await batch(keel1, 20);
  await batch(keel2, 20);
  const one: Batch[] = [];
  const two: Batch[] = [];
  const floor: Batch[] = [];
  const turns = THROUGHPUT_RUNS * THROUGHPUT_TURNS;
  for (let r = 0; r < ROUNDS; r++) {
    const roundStart = performance.now();
    await main.stats(true);
    let w0 = await main.cpuMs();
    let s0 = procCpuMs(serverPid);
    const a = await batch(keel1, THROUGHPUT_RUNS);
    const q = await main.stats(true);
    a.messagesQueriesPerTurn = (q.messages?.count ?? 0) / turns;
    a.messagesReadPerTurn = (q.messages?.messages ?? 0) / turns;
    a.workerCpuMsPerTurn = ((await main.cpuMs()) - w0) / turns;
    a.serverCpuMsPerTurn = (procCpuMs(serverPid) - s0) / turns;
    one.push(a);
    await second.stats(true);
    w0 = (await main.cpuMs()) + (await second.cpuMs());
    s0 = procCpuMs(serverPid);
    const b = await batch(keel2, THROUGHPUT_RUNS);
    const q2 = [await main.stats(true), await second.stats(true)];
    b.messagesQueriesPerTurn = q2.reduce((n, q) => n + (q.messages?.count ?? 0), 0) / turns;
    b.messagesReadPerTurn = q2.reduce((n, q) => n + (q.messages?.messages ?? 0), 0) / turns;
    b.workerCpuMsPerTurn = ((await main.cpuMs()) + (await second.cpuMs()) - w0) / turns;
    b.serverCpuMsPerTurn = (procCpuMs(serverPid) - s0) / turns;
    two.push(b);
    log(`  round ${r + 1}: 1 worker ${fmt(a.turnsPerSecond)} turns/s (p50 ${fmt(a.p50Ms)} ms, p99 ${fmt(a.p99Ms)} ms); 2 workers ${fmt(b.turnsPerSecond)} turns/s (p50 ${fmt(b.p50Ms)} ms, p99 ${fmt(b.p99Ms)} ms)`);
    // The engine floor under the same load, when the budget allows (context for the turns/s target).
    if (BUDGET_MS - (performance.now() - started) > a.wallMs * 1.1 + 20_000) {
      w0 = await main.cpuMs();
      s0 = procCpuMs(serverPid);
      const f = await floorBatch(THROUGHPUT_RUNS);
      f.workerCpuMsPerTurn = ((await main.cpuMs()) - w0) / turns;
      f.serverCpuMsPerTurn = (procCpuMs(serverPid) - s0) / turns;
      floor.push(f);
      log(`  round ${r + 1}: engine floor, 1 worker ${fmt(f.turnsPerSecond)} turns/s (p50 ${fmt(f.p50Ms)} ms, p99 ${fmt(f.p99Ms)} ms)`);
    }
    const roundMs = performance.now() - roundStart;
    const left = BUDGET_MS - (performance.now() - started);
    if (r + 1 < ROUNDS && left < roundMs * 1.1 + 20_000) {
      log(`  stopping after ${r + 1} round(s): ${fmt(left / 1000, 0)} s of the ${BUDGET_MS / 1000} s budget left, a round takes ${fmt(roundMs / 1000, 0)} s`);
      break;
    }
  }
  await second.stop();
  const pick = (xs: Batch[]) => ({
    turnsPerSecond: summarize(xs.map((x) => x.turnsPerSecond)),
    p50Ms: summarize(xs.map((x) => x.p50Ms)),
    p99Ms: summarize(xs.map((x) => x.p99Ms)),
    wallSeconds: summarize(xs.map((x) => x.wallMs / 1000)),
    workerCpuMsPerTurn: summarize(xs.map((x) => x.workerCpuMsPerTurn ?? NaN)),
    serverCpuMsPerTurn: summarize(xs.map((x) => x.serverCpuMsPerTurn ?? NaN)),
    messagesQueriesPerTurn: summarize(xs.map((x) => x.messagesQueriesPerTurn ?? NaN)),
    messagesReadPerTurn: summarize(xs.map((x) => x.messagesReadPerTurn ?? NaN)),
  });
  return {
    runs: THROUGHPUT_RUNS,
    turnsPerRun: THROUGHPUT_TURNS,
    rounds: one.length,
    oneWorker: pick(one),
    twoWorkers: pick(two),
    floorOneWorker: floor.length ? pick(floor) : null,
    twoOverOne: pairedRatio(
      two.map((x) => x.turnsPerSecond),
      one.map((x) => x.turnsPerSecond),
    ),
  };
}

interface Batch {
  wallMs: number;
  turnsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  messagesQueriesPerTurn?: number;
  /** Messages those queries returned, per turn (a worker that missed earlier messages reads them all again). */
  messagesReadPerTurn?: number;
  workerCpuMsPerTurn?: number;
  serverCpuMsPerTurn?: number;
}

async function floorBatch(runs: number): Promise<Batch> {
  const t0 = performance.now();
  const latencies = await Promise.all(
    Array.from({ length: runs }, async () => {
      const t = performance.now();
      const handle = await client.workflow.start('floorWorkflow', { taskQueue: QUEUE.bench, workflowId: `bench-floor-tp-${randomUUID()}`, args: [THROUGHPUT_TURNS, {}] });
      await handle.result();
      return performance.now() - t;
    }),
  );
  const wallMs = performance.now() - t0;
  const sorted = latencies.sort((a, b) => a - b);
  return { wallMs, turnsPerSecond: (runs * THROUGHPUT_TURNS) / (wallMs / 1000), p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
}

async function batch(agent: AgentClient, runs: number): Promise<Batch> {
  const input = keelInput('bench-noop', ['noop'], THROUGHPUT_TURNS);
  const t0 = performance.now();
  const latencies = await Promise.all(
    Array.from({ length: runs }, async () => {
      const t = performance.now();
      const handle = await agent.start(input, { workflowId: `bench-tp-${randomUUID()}` });
      const r = await handle.result();
      if (r.turns !== THROUGHPUT_TURNS) throw new Error(`throughput run: ${r.status} after ${r.turns} turns`);
      return performance.now() - t;
    }),
  );
  const wallMs = performance.now() - t0;
  const sorted = latencies.sort((a, b) => a - b);
  return { wallMs, turnsPerSecond: (runs * THROUGHPUT_TURNS) / (wallMs / 1000), p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
}

// ---------------------------------------------------------------------------------------------------------------------
// 4. Memory

async function memorySection() {
  log(`memory: fresh worker processes; RSS with ${SESSION_COUNTS.join(', ')} parked sessions (Keel), and ${FLOOR_PARKED.join(', ')} parked minimal workflows (engine floor)`);
  // Engine floor: a minimal workflow that does one model + one tool round trip and waits for a signal.
  const fw = spawnWorker('memory-floor', [], QUEUE.benchMem, true);
  await fw.ready;
  for (let i = 0; i < 5; i++) await client.workflow.execute('floorWorkflow', { taskQueue: QUEUE.benchMem, workflowId: `bench-floor-${randomUUID()}`, args: [2, {}] });
  const floorPoints: { sessions: number; rss: Summary }[] = [];
  const parked: string[] = [];
  for (const count of FLOOR_PARKED) {
    const ids = Array.from({ length: count - parked.length }, () => `bench-parked-${randomUUID()}`);
    await pool(ids, 50, (id) => client.workflow.start('parkedWorkflow', { taskQueue: QUEUE.benchMem, workflowId: id, args: [] }));
    // waiting once the third workflow task completed (16 events)
    const pending = new Set(ids);
    await waitUntil(async () => {
      await pool([...pending], 50, async (id) => ((await client.workflow.getHandle(id).describe()).historyLength >= 16 ? pending.delete(id) : undefined));
      return pending.size === 0;
    }, 'parked workflows waiting');
    parked.push(...ids);
    floorPoints.push({ sessions: count, rss: await rssSamples(fw) });
    log(`  floor: ${count} parked: RSS ${fmtBytes(floorPoints[floorPoints.length - 1].rss.median)}`);
  }
  await fw.stop();
  await pool(parked, 50, (id) => client.workflow.getHandle(id).terminate('bench done').catch(() => undefined));

  const w = spawnWorker('memory', [QUEUE.keelMem], undefined, true);
  log(`worker process memory pid ${await w.ready}`);
  const agent = new AgentClient(client, QUEUE.keelMem);
  for (let i = 0; i < 5; i++) await keelRun(agent, keelInput('bench-hello', [], 5));
  const sessions: string[] = [];
  const points: { sessions: number; rss: Summary; heapUsed: Summary }[] = [];
  let transcriptBytes = 0;
  for (const count of SESSION_COUNTS) {
    const ids = Array.from({ length: count - sessions.length }, () => `bench-session-${randomUUID()}`);
    await pool(ids, 50, (id) => agent.start(keelInput('bench-hello', [], 5, { mode: 'session', idleTimeout: '1h' }), { workflowId: id }));
    sessions.push(...ids);
    if (sessions.length > 0) {
      await waitUntil(async () => (await client.workflow.count(`TaskQueue = "${QUEUE.keelMem}" AND KeelStatus = "waiting"`)).count >= sessions.length, 'sessions waiting');
      transcriptBytes ||= Buffer.byteLength(JSON.stringify(await agent.getHandle(sessions[0]).allMessages()));
    }
    const heap: number[] = [];
    points.push({ sessions: count, rss: await rssSamples(w, heap), heapUsed: summarize(heap) });
    log(`  Keel: ${count} parked sessions: RSS ${fmtBytes(points[points.length - 1].rss.median)}`);
  }
  log(`  terminating ${sessions.length} sessions`);
  await w.stop();
  await pool(sessions, 50, (id) => client.workflow.getHandle(id).terminate('bench done').catch(() => undefined));
  const p0 = points[0];
  const pLast = points[points.length - 1];
  const pMid = points[1];
  const perSession = (pLast.rss.median - p0.rss.median) / pLast.sessions;
  const slope = (a: { sessions: number; rss: Summary }, b: { sessions: number; rss: Summary }) => (b.rss.median - a.rss.median) / (b.sessions - a.sessions);
  const floorPerSession = slope(floorPoints[floorPoints.length - 2], floorPoints[floorPoints.length - 1]);
  const keelSlope = slope(pMid, pLast);
  return {
    points,
    floorPoints,
    transcriptBytesPerSession: transcriptBytes,
    rssPerSessionBytes: perSession,
    rssPerSessionSlopeBytes: keelSlope,
    /** Slope between the floor's last two points. */
    floorRssPerSessionBytes: floorPerSession,
    beyondTranscriptBytes: perSession - transcriptBytes,
    /** Keel's slope (100→500) minus the floor's. */
    beyondFloorBytes: keelSlope - floorPerSession,
    note: 'VmRSS of a fresh worker process after two forced GCs of its main thread (--expose-gc; the workflow thread is not forced); 5 samples 200 ms apart',
  };
}

async function rssSamples(w: WorkerProcess, heap: number[] = []): Promise<Summary> {
  await new Promise((r) => setTimeout(r, 1000));
  const rss: number[] = [];
  for (let i = 0; i < 5; i++) {
    const m = await w.rss();
    rss.push(m.rssBytes);
    heap.push(m.heapUsed);
    await new Promise((r) => setTimeout(r, 200));
  }
  return summarize(rss);
}

async function waitUntil(fn: () => Promise<boolean>, what: string, timeoutMs = 180_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let reported = false;
  const attempt = () =>
    fn().catch((err) => {
      if (!reported) log(`  (waiting for ${what}: ${err instanceof Error ? err.message : String(err)})`);
      reported = true;
      return false;
    });
  while (!(await attempt())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function pool<T, R>(items: T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

// ---------------------------------------------------------------------------------------------------------------------
// Report

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function markdown(r: any): string {
  const rows: string[][] = [];
  const row = (section: string, figure: string, value: string, target = '', met = '') => rows.push([section, figure, value, target, met]);
  const check = (ok: boolean | undefined) => (ok === undefined ? '' : ok ? 'met' : '**missed**');
  const o = r.overhead;
  if (o) {
    row('1 per-turn', `Keel agentWorkflow, ms/turn (${o.turns} turns)`, fmtSummary(o.keelMsPerTurn));
    row('1 per-turn', 'engine floor, ms/turn', fmtSummary(o.floorMsPerTurn));
    row('1 per-turn', 'Pi in-process agentLoop, ms/turn', o.piMsPerTurn ? fmtSummary(o.piMsPerTurn, (x) => fmt(x, 3)) : `${PI_AGENT_CORE} not installed`);
    row('1 per-turn', 'Keel / floor', fmtSummary(o.keelOverFloor), '≤ 1.5', check(o.keelOverFloor.median <= 1.5));
    const cpu = (c: { workerMs: Summary; serverMs: Summary | null }) => `worker ${fmtSummary(c.workerMs)}, server ${c.serverMs ? fmtSummary(c.serverMs) : '?'}`;
    row('1 per-turn', 'CPU ms/turn: Keel', cpu(o.cpuPerTurn.keel));
    row('1 per-turn', 'CPU ms/turn: floor', cpu(o.cpuPerTurn.floor));
    row('1 per-turn', `CPU ceiling, turns/s (${r.machine.cpus} cores ÷ worker+server CPU per turn): Keel / floor`, `${fmt(o.cpuCeilingTurnsPerSecond.keel, 1)} / ${fmt(o.cpuCeilingTurnsPerSecond.floor, 1)}`);
    for (const v of o.floorVariants) row('1 attribution', `${v.name}: ms/turn (÷ floor); CPU ms/turn`, `${fmtSummary(v.msPerTurn)} (${fmtSummary(v.overFloor)}); ${cpu(v.cpuPerTurn)}`);
    row('1 per-turn', 'Keel / Pi', o.keelOverPi ? fmtSummary(o.keelOverPi, (x) => fmt(x, 0)) : `${PI_AGENT_CORE} not installed`);
    const p = o.profile;
    const acts = (x: typeof p.keel) => Object.entries(x.activities as Record<string, { perTurn: number }>).map(([n, a]) => `${n} ${fmt(a.perTurn)}`).join(', ');
    row('1 profile', 'Keel per turn: events / workflow tasks / activities', `${fmt(p.keel.eventsPerTurn, 1)} / ${fmt(p.keel.workflowTasksPerTurn)} / ${acts(p.keel)}`);
    row('1 profile', 'floor per turn: events / workflow tasks / activities', `${fmt(p.floor.eventsPerTurn, 1)} / ${fmt(p.floor.workflowTasksPerTurn)} / ${acts(p.floor)}`);
    row('1 profile', 'Keel queries sent by activities per turn', Object.entries(p.keelQueriesPerTurn as Record<string, { perTurn: number; msEach: number; messagesPerTurn: number }>).map(([t, q]) => `${t}: ${fmt(q.perTurn)} (${fmt(q.msEach)} ms each, ${fmt(q.messagesPerTurn)} messages returned per turn)`).join(', ') || 'none');
    const split = (x: typeof p.keel) =>
      `WFT queue ${fmt(x.wftQueueMsPerTurn)} + WFT run ${fmt(x.wftRunMsPerTurn)} + ${Object.entries(x.activities as Record<string, { queueMsPerTurn: number; runMsPerTurn: number }>)
        .map(([n, a]) => `${n} ${fmt(a.queueMsPerTurn)}q/${fmt(a.runMsPerTurn)}r`)
        .join(' + ')} (+ other ${fmt(x.otherMsPerTurn)}) = ${fmt(x.wallMsPerTurn)}`;
    row('1 profile', 'workflow code per turn, replaying the history: CPU ms; promises created — Keel / floor', `${fmt(p.replayCpuMsPerTurn.keel.cpuMs)} ms, ${fmt(p.replayCpuMsPerTurn.keel.promises, 1)} / ${fmt(p.replayCpuMsPerTurn.floor.cpuMs)} ms, ${fmt(p.replayCpuMsPerTurn.floor.promises, 1)}`);
    row('1 profile', 'Keel ms/turn from history timestamps', split(p.keel));
    row('1 profile', 'floor ms/turn from history timestamps', split(p.floor));
  }
  const h = r.history;
  if (h) {
    for (const pt of h.keel.points as TurnPoint[]) {
      row('2 history', `Keel after turn ${pt.turn}: bytes / events / CAN`, `${fmtBytes(pt.bytes)} / ${pt.events} / ${pt.continuedAsNew}`);
      row('2 history', `Keel bytes per turn at ${pt.turn} (last 10 turns; cumulative avg)`, `${fmtBytes(pt.bytesPerTurn)}; ${fmtBytes(pt.avgBytesPerTurn)} (${fmt(pt.eventsPerTurn, 1)} events/turn)`);
    }
    row('2 history', 'Keel bytes/turn at 500 ÷ at 10', fmt(h.keel.perTurnGrowth), '≤ 1.1', check(h.keel.perTurnGrowth <= 1.1));
    row('2 history', 'Keel ms/turn at 10 / 100 / 250 / 500 (history timestamps)', HISTORY_POINTS.map((t) => fmt(h.keel.msPerTurnAt[t])).join(' / '));
    const byType = Object.entries(h.keel.bytesPerTurnByEventType as Record<string, number>).sort((a, b) => b[1] - a[1]);
    row('2 history', 'Keel bytes per turn by event (turns 11–499)', byType.map(([k, v]) => `${k} ${fmtBytes(v)}`).join(', '));
    row('2 history', `Keel ${h.turns}-turn run: wall time, runs (continue-as-new)`, `${fmt(h.keel.seconds, 1)} s, ${h.keel.runs} run(s) (${h.keel.continuedAsNew} CAN)`);
    const sug = h.keel.continueAsNewSuggestedAt;
    row('2 history', 'Keel continue-as-new: Temporal first suggested it at; transcript passed the 1.5 M-char carry cap at', `${sug ? `turn ${sug.turn} (history ${fmtBytes(sug.historyBytes)})` : 'never'}; ${h.keel.transcriptPast1500000CharsAtTurn ? `turn ${h.keel.transcriptPast1500000CharsAtTurn}` : 'never'} (transcript ≈ ${fmtBytes(h.keel.transcriptJsonChars)} JSON at the end)`);
    for (const pt of h.naive.points as TurnPoint[]) row('2 history', `naive after turn ${pt.turn}: bytes / events`, `${fmtBytes(pt.bytes)} / ${pt.events} (${fmtBytes(pt.bytesPerTurn)}/turn)`);
    row('2 history', 'naive: where it stops', `${h.naive.outcome} after ${h.naive.turnsCompleted} model calls, history ${fmtBytes(h.naive.historyBytes)} / ${h.naive.historyEvents} events, largest model input ${fmtBytes(h.naive.largestModelInputBytes)}: ${h.naive.failure ?? ''}`);
  }
  const t = r.throughput;
  if (t) {
    row('3 throughput', `1 worker: turns/s (${t.runs} × ${t.turnsPerRun}-turn runs)`, fmtSummary(t.oneWorker.turnsPerSecond), '≥ 100', check(t.oneWorker.turnsPerSecond.median >= 100));
    row('3 throughput', '1 worker: run latency p50 / p99, ms', `${fmtSummary(t.oneWorker.p50Ms)} / ${fmtSummary(t.oneWorker.p99Ms)}`);
    row('3 throughput', '1 worker: messages queries per turn (messages they returned per turn)', `${fmtSummary(t.oneWorker.messagesQueriesPerTurn)} (${fmtSummary(t.oneWorker.messagesReadPerTurn)})`);
    row('3 throughput', '2 workers: turns/s', fmtSummary(t.twoWorkers.turnsPerSecond), '≥ 100', check(t.twoWorkers.turnsPerSecond.median >= 100));
    row('3 throughput', '2 workers: run latency p50 / p99, ms', `${fmtSummary(t.twoWorkers.p50Ms)} / ${fmtSummary(t.twoWorkers.p99Ms)}`);
    row('3 throughput', '2 workers: messages queries per turn (messages they returned per turn)', `${fmtSummary(t.twoWorkers.messagesQueriesPerTurn)} (${fmtSummary(t.twoWorkers.messagesReadPerTurn)})`);
    row('3 throughput', '2 workers ÷ 1 worker (turns/s)', fmtSummary(t.twoOverOne));
    if (t.floorOneWorker) {
      row('3 throughput', `engine floor, 1 worker: turns/s (${t.floorOneWorker.turnsPerSecond.n} batch(es))`, fmtSummary(t.floorOneWorker.turnsPerSecond), '≥ 100', check(t.floorOneWorker.turnsPerSecond.median >= 100));
      row('3 throughput', 'engine floor, 1 worker: p50 / p99 ms; CPU ms/turn (worker, server)', `${fmtSummary(t.floorOneWorker.p50Ms)} / ${fmtSummary(t.floorOneWorker.p99Ms)}; ${fmtSummary(t.floorOneWorker.workerCpuMsPerTurn)}, ${fmtSummary(t.floorOneWorker.serverCpuMsPerTurn)}`);
    }
    row('3 throughput', 'CPU ms/turn at 200 concurrent: 1 worker (worker, server); 2 workers (workers, server)', `${fmtSummary(t.oneWorker.workerCpuMsPerTurn)}, ${fmtSummary(t.oneWorker.serverCpuMsPerTurn)}; ${fmtSummary(t.twoWorkers.workerCpuMsPerTurn)}, ${fmtSummary(t.twoWorkers.serverCpuMsPerTurn)}`);
    row('3 throughput', 'rounds run (time budget)', String(t.rounds));
  }
  const m = r.memory;
  if (m) {
    for (const p of m.points) row('4 memory', `worker RSS, ${p.sessions} parked sessions`, fmtSummary(p.rss, fmtBytes));
    row('4 memory', 'RSS per session (0→500; 100→500 slope)', `${fmtBytes(m.rssPerSessionBytes)}; ${fmtBytes(m.rssPerSessionSlopeBytes)}`);
    row('4 memory', 'per session beyond its transcript', `${fmtBytes(m.beyondTranscriptBytes)} (transcript ${fmtBytes(m.transcriptBytesPerSession)} JSON)`, '≤ 1 MB', check(m.beyondTranscriptBytes <= 1_000_000));
    for (const p of m.floorPoints) row('4 memory', `engine floor: worker RSS, ${p.sessions} parked minimal workflows`, fmtSummary(p.rss, fmtBytes));
    row('4 memory', `engine floor per parked workflow (${FLOOR_PARKED.slice(-2).join('→')} slope); Keel session beyond it (slopes)`, `${fmtBytes(m.floorRssPerSessionBytes)}; ${fmtBytes(m.beyondFloorBytes)}`);
  }
  const lines = [
    `# Keel bench`,
    '',
    `${r.date} · ${r.machine.cpus} CPUs (${r.machine.cpuModel}) · Node ${r.machine.node} · Temporal CLI: ${r.temporalCli.replace(/\n/g, ' ')} · SDK ${r.sdk} · dev server ${r.serverArgs.filter((a: string) => a.includes('=')).join(', ') || 'stock settings'} · ${r.rounds} rounds after warm-up · total ${fmt(r.totalSeconds, 0)} s · load average ${fmt(r.machine.loadAverageAtStart[0])} at start, ${fmt(r.machine.loadAverageAtEnd[0])} at end`,
    '',
    'Values: median (min–max) over rounds.',
    '',
    '| section | figure | median (min–max) | target | |',
    '|---|---|---|---|---|',
    ...rows.map((c) => `| ${c.join(' | ')} |`),
    '',
  ];
  if (h) lines.push(`History bytes: ${h.measure}.`, '');
  if (o && !o.piMsPerTurn) lines.push(`Pi row: ${PI_AGENT_CORE} not installed; install with \`${PI_INSTALL}\`.`, '');
  return lines.join('\n');
}

