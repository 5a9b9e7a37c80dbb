/**
 * Section 14, capacity (`BENCH_ONLY=capacity`, issue 35 item 10): the inputs of the capacity model
 * (bench/capacity-model.ts, docs/capacity.md), measured on this run's dev server, and the model worked out from them.
 *
 * - A plain turn: BENCH_ROUNDS 20-turn runs (`scripted/bench-noop`, a no-op tool call a turn) on the main worker
 *   process, after a warm-up. Per turn: Temporal frontend requests by operation, history-service and persistence
 *   requests (the server's own counters: its Prometheus endpoint, bench/server-metrics.ts), billable actions from
 *   history (bench/actions.ts) beside the server's `action` counter, history bytes, worker and server CPU.
 * - A streamed turn: one run whose model streams each reply for about a second (`scripted/bench-stream`), nobody
 *   reading: what streaming adds per second the model streams (heartbeat RPCs, worker and server CPU).
 * - A live reader: `handle.stream()` on the same streamed run, in this process on a connection of its own whose gRPC
 *   interceptor counts its RPCs by method: RPCs per second and this process's CPU per turn; then a reader of a session
 *   run that waits for input (BENCH_CAPACITY_IDLE_S, default 5 s).
 * - Load: BENCH_CAPACITY_RUNS (default 50) concurrent 10-turn runs on the one worker process: turns/s, CPU per turn.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { countingConnection } from './counting-connection.js';
import { AgentClient } from '../client/agent-client.js';
import { keelDataConverter } from '../node-common/payload-storage.js';
import { billableActions } from './actions.js';
import {
  capacityPlan,
  FLEET,
  LIMITS,
  type CapacityInputs,
  type CapacityPlan,
  type FleetLoad,
  type WorkCost,
} from './capacity-model.js';
import { ROUNDS, type Bench } from './context.js';
import { QUEUE } from './fixtures.js';
import { eventBytes, fetchChain, timeBreakdown } from './history.js';
import { childPid, procCpuMs } from './proc.js';
import { keelInput, keelRun, pool, waitUntil } from './runs.js';
import { diffCounters, scrapeCounters, total, type ServerCounters } from './server-metrics.js';
import { summarize, type Summary } from './stats.js';

const TURNS = 20;
const STREAM_TURNS = 5;
const LOAD_TURNS = 10;
const LOAD_RUNS = Math.max(1, Number(process.env.BENCH_CAPACITY_RUNS ?? 50));
const IDLE_S = Math.max(1, Number(process.env.BENCH_CAPACITY_IDLE_S ?? 5));
/** Longer than the server takes to publish its counters (a wait of 2.5 s made them match the histories). */
const REPORTING_WAIT_MS = 2500;

/** The server's counters, the main worker's and the server's CPU, at one moment. */
interface Reading {
  counters: ServerCounters;
  workerCpuMs: number;
  serverCpuMs: number;
  at: number;
}

/** What happened between two readings. */
interface Usage {
  counters: ServerCounters;
  frontend: number;
  workerCpuMs: number;
  serverCpuMs: number;
  seconds: number;
}

class Meter {
  private readonly serverPid = childPid('temporal');
  constructor(private readonly b: Bench) {}

  async read(): Promise<Reading> {
    const counters = await scrapeCounters(this.b.metricsUrl);
    return { counters, workerCpuMs: await this.b.main.cpuMs(), serverCpuMs: procCpuMs(this.serverPid), at: now() };
  }

  /**
   * Runs `work` between two readings. The server publishes its counters on its metrics endpoint periodically, so each
   * reading waits REPORTING_WAIT_MS after the work before it: read at once, a 1-second run's counts were off by up to
   * a half (the warm-up's late requests counted in, the run's last ones left out; its activities no longer matched its
   * history).
   */
  async around<T>(work: () => Promise<T>): Promise<{ result: T; usage: Usage }> {
    await settle();
    const a = await this.read();
    const result = await work();
    await settle();
    const z = await this.read();
    const counters = diffCounters(a.counters, z.counters);
    return {
      result,
      usage: {
        counters,
        frontend: total(counters.frontend),
        workerCpuMs: z.workerCpuMs - a.workerCpuMs,
        serverCpuMs: z.serverCpuMs - a.serverCpuMs,
        seconds: (z.at - a.at - REPORTING_WAIT_MS) / 1000,
      },
    };
  }
}

const now = () => performance.now();
const settle = () => new Promise((r) => setTimeout(r, REPORTING_WAIT_MS));
/** What `usage` cost per unit (turn), as the model takes it. */
const costOf = (u: Usage, n: number): WorkCost => ({
  frontendRpcs: u.frontend / n,
  historyRpcs: total(u.counters.history) / n,
  persistenceRequests: u.counters.persistence / n,
  serverActions: total(u.counters.actions) / n,
  workerCpuMs: u.workerCpuMs / n,
  serverCpuMs: u.serverCpuMs / n,
});
const perUnit = (byKey: Record<string, number>, n: number) =>
  Object.fromEntries(Object.entries(byKey).map(([k, v]) => [k, v / n]));
const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

export interface CapacityResult {
  turns: number;
  /** One plain turn, summarized over the rounds; by operation: the last round's, per turn. */
  perTurn: {
    msPerTurn: Summary;
    frontendRpcs: Summary;
    frontendByOperation: Record<string, number>;
    historyRpcs: Summary;
    matchingRpcs: Summary;
    persistenceRequests: Summary;
    actions: Summary;
    actionsByKind: Record<string, number>;
    serverActions: Summary;
    serverActionsByType: Record<string, number>;
    historyBytes: Summary;
    workerCpuMs: Summary;
    serverCpuMs: Summary;
  };
  streamed: StreamedTurn;
  reader: { streaming: ReaderFigures; idle: ReaderFigures };
  load: LoadFigures;
  inputs: CapacityInputs;
  fleet: FleetLoad;
  limits: typeof LIMITS;
  plan: CapacityPlan;
}

interface StreamedTurn {
  turns: number;
  /** Seconds the model call ran per turn (it streams all along). */
  modelSeconds: number;
  /** Per streamed turn. */
  cost: WorkCost;
  frontendByOperation: Record<string, number>;
  serverActionsByType: Record<string, number>;
}

interface ReaderFigures {
  seconds: number;
  rpcsPerSecond: number;
  /** Its `events` queries per second (each one an action). */
  queriesPerSecond: number;
  byMethodPerSecond: Record<string, number>;
  cpuMsPerSecond: number;
  /** Streaming only: this process's CPU per turn read, and the server's frontend requests the read added per second. */
  cpuMsPerTurn?: number;
  serverAddedRpcsPerSecond?: number;
}

interface LoadFigures {
  runs: number;
  turnsPerRun: number;
  turnsPerSecond: number;
  frontendRpcsPerTurn: number;
  workerCpuMsPerTurn: number;
  serverCpuMsPerTurn: number;
}

/** A client whose connection counts its RPCs by method (each attempt), for one reader. */
async function countingClient(address: string): Promise<{ agent: AgentClient; calls: Record<string, number> }> {
  const { connection, calls } = await countingConnection(address);
  const agent = new AgentClient(new Client({ connection, dataConverter: keelDataConverter() }), QUEUE.keel1);
  return { agent, calls };
}

async function plainTurns(b: Bench, meter: Meter): Promise<CapacityResult['perTurn']> {
  const input = keelInput('bench-noop', ['noop'], TURNS);
  await keelRun(b.keel1, input); // warm-up
  const rounds: { ms: number; usage: Usage; actions: ReturnType<typeof billableActions>; bytes: number }[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const { result: k, usage } = await meter.around(() => keelRun(b.keel1, input));
    if (k.result.turns !== TURNS || k.result.status !== 'stopped')
      throw new Error(`capacity run: ${k.result.status}, ${k.result.turns} turns`);
    const chain = await fetchChain(b.client, k.workflowId);
    const bytes = chain.events.reduce((n, e) => n + eventBytes(e), 0);
    rounds.push({ ms: k.ms, usage, actions: billableActions(chain.events, 'callModel'), bytes });
    b.log(`  round ${r + 1}: ${(usage.frontend / TURNS).toFixed(1)} frontend RPCs/turn`);
  }
  const last = rounds[rounds.length - 1];
  const each = (f: (x: (typeof rounds)[number]) => number) => summarize(rounds.map((x) => f(x) / TURNS));
  return {
    msPerTurn: each((x) => x.ms),
    frontendRpcs: each((x) => x.usage.frontend),
    frontendByOperation: perUnit(last.usage.counters.frontend, TURNS),
    historyRpcs: each((x) => total(x.usage.counters.history)),
    matchingRpcs: each((x) => x.usage.counters.matching),
    persistenceRequests: each((x) => x.usage.counters.persistence),
    actions: each((x) => x.actions.total),
    actionsByKind: perUnit(last.actions.byKind, TURNS),
    serverActions: each((x) => total(x.usage.counters.actions)),
    serverActionsByType: perUnit(last.usage.counters.actions, TURNS),
    historyBytes: each((x) => x.bytes),
    workerCpuMs: each((x) => x.usage.workerCpuMs),
    serverCpuMs: each((x) => x.usage.serverCpuMs),
  };
}

/** A streamed run with nobody reading, then one read by a `handle.stream()` reader on a counting connection. */
async function streamedTurns(b: Bench, meter: Meter): Promise<{ streamed: StreamedTurn; reader: ReaderFigures }> {
  const input = keelInput('bench-stream', ['noop'], STREAM_TURNS);
  const { result: k, usage } = await meter.around(() => keelRun(b.keel1, input));
  if (k.result.turns !== STREAM_TURNS) throw new Error(`capacity streamed run: ${k.result.turns} turns`);
  const model = timeBreakdown((await fetchChain(b.client, k.workflowId)).events).activities.callModel;
  const streamed: StreamedTurn = {
    turns: STREAM_TURNS,
    modelSeconds: model.runMs / model.count / 1000,
    cost: costOf(usage, STREAM_TURNS),
    frontendByOperation: perUnit(usage.counters.frontend, STREAM_TURNS),
    serverActionsByType: perUnit(usage.counters.actions, STREAM_TURNS),
  };
  const { agent, calls } = await countingClient(b.server.address);
  try {
    const read = await meter.around(async () => {
      const cpu0 = process.cpuUsage();
      const t0 = now();
      const h = await agent.start(input, { workflowId: `bench-capacity-read-${randomUUID()}` });
      for await (const e of h.stream()) void e;
      return { cpu: cpuMs(process.cpuUsage(cpu0)), seconds: (now() - t0) / 1000 };
    });
    const { cpu, seconds } = read.result;
    const readerCalls = total(calls) - (calls.StartWorkflowExecution ?? 0);
    const { StartWorkflowExecution: _start, ...readCalls } = calls;
    return {
      streamed,
      reader: {
        seconds,
        rpcsPerSecond: readerCalls / seconds,
        queriesPerSecond: (calls.QueryWorkflow ?? 0) / seconds,
        byMethodPerSecond: perUnit(readCalls, seconds),
        cpuMsPerSecond: cpu / seconds,
        cpuMsPerTurn: cpu / STREAM_TURNS,
        serverAddedRpcsPerSecond: (read.usage.frontend - usage.frontend) / seconds,
      },
    };
  } finally {
    await agent.close();
  }
}

/** A reader of a session run that waits for input, for IDLE_S seconds after it caught up. */
async function idleReader(b: Bench): Promise<ReaderFigures> {
  const { agent, calls } = await countingClient(b.server.address);
  const h = await b.keel1.start(
    { ...keelInput('bench-hello', [], 5), mode: 'session', idleTimeout: '10m' },
    { workflowId: `bench-capacity-idle-${randomUUID()}` },
  );
  const stop = new AbortController();
  try {
    await waitUntil(b.log, async () => (await h.state()).status === 'waiting', 'the session run to wait');
    const reading = (async () => {
      for await (const e of agent.getHandle(h.workflowId).stream({ signal: stop.signal })) void e;
    })();
    await new Promise((r) => setTimeout(r, 1000)); // the reader catches up with the run's events
    const before = { ...calls };
    const cpu0 = process.cpuUsage();
    const t0 = now();
    await new Promise((r) => setTimeout(r, IDLE_S * 1000));
    const seconds = (now() - t0) / 1000;
    const cpu = cpuMs(process.cpuUsage(cpu0));
    const during = Object.fromEntries(Object.entries(calls).map(([m, n]) => [m, n - (before[m] ?? 0)]));
    stop.abort();
    await reading;
    return {
      seconds,
      rpcsPerSecond: total(during) / seconds,
      queriesPerSecond: (during.QueryWorkflow ?? 0) / seconds,
      byMethodPerSecond: perUnit(during, seconds),
      cpuMsPerSecond: cpu / seconds,
    };
  } finally {
    stop.abort();
    await h.end().catch(() => {});
    await agent.close();
  }
}

async function underLoad(b: Bench, meter: Meter): Promise<LoadFigures> {
  const input = keelInput('bench-noop', ['noop'], LOAD_TURNS);
  const ids = Array.from({ length: LOAD_RUNS }, (_, i) => i);
  const { usage } = await meter.around(() => pool(ids, LOAD_RUNS, () => keelRun(b.keel1, input)));
  const turns = LOAD_RUNS * LOAD_TURNS;
  return {
    runs: LOAD_RUNS,
    turnsPerRun: LOAD_TURNS,
    turnsPerSecond: turns / usage.seconds,
    frontendRpcsPerTurn: usage.frontend / turns,
    workerCpuMsPerTurn: usage.workerCpuMs / turns,
    serverCpuMsPerTurn: usage.serverCpuMs / turns,
  };
}

/** The model's inputs from the measurements (medians for the plain turn; streaming's extra per second streamed). */
export function modelInputs(
  perTurn: CapacityResult['perTurn'],
  streamed: StreamedTurn,
  reader: CapacityResult['reader'],
  load: LoadFigures,
): CapacityInputs {
  const turn: WorkCost = {
    frontendRpcs: perTurn.frontendRpcs.median,
    historyRpcs: perTurn.historyRpcs.median,
    persistenceRequests: perTurn.persistenceRequests.median,
    serverActions: perTurn.serverActions.median,
    workerCpuMs: perTurn.workerCpuMs.median,
    serverCpuMs: perTurn.serverCpuMs.median,
  };
  const keys = Object.keys(turn) as (keyof WorkCost)[];
  const streaming = Object.fromEntries(
    keys.map((k) => [k, Math.max(0, streamed.cost[k] - turn[k]) / streamed.modelSeconds]),
  ) as unknown as WorkCost;
  return {
    turn: { ...turn, actions: perTurn.actions.median, historyBytes: perTurn.historyBytes.median },
    streaming,
    reader: {
      rpcsPerSecondStreaming: reader.streaming.rpcsPerSecond,
      rpcsPerSecondIdle: reader.idle.rpcsPerSecond,
      queriesPerSecondStreaming: reader.streaming.queriesPerSecond,
      queriesPerSecondIdle: reader.idle.queriesPerSecond,
      cpuMsPerSecondStreaming: reader.streaming.cpuMsPerSecond,
      cpuMsPerSecondIdle: reader.idle.cpuMsPerSecond,
    },
    throughput: {
      turnsPerSecondPerWorker: load.turnsPerSecond,
      workerCpuMsPerTurn: load.workerCpuMsPerTurn,
      serverCpuMsPerTurn: load.serverCpuMsPerTurn,
    },
  };
}

export async function capacitySection(b: Bench): Promise<CapacityResult> {
  b.log(
    `capacity: ${ROUNDS} × ${TURNS}-turn runs, a ${STREAM_TURNS}-turn streamed run unread and read, an idle reader ${IDLE_S} s, ${LOAD_RUNS} concurrent ${LOAD_TURNS}-turn runs`,
  );
  const meter = new Meter(b);
  const perTurn = await plainTurns(b, meter);
  const { streamed, reader: streaming } = await streamedTurns(b, meter);
  b.log(
    `  streamed: ${streamed.cost.frontendRpcs.toFixed(1)} RPCs/turn; reader ${streaming.rpcsPerSecond.toFixed(1)} RPCs/s`,
  );
  const idle = await idleReader(b);
  b.log(`  idle reader: ${idle.rpcsPerSecond.toFixed(1)} RPCs/s`);
  const load = await underLoad(b, meter);
  b.log(`  load: ${load.turnsPerSecond.toFixed(1)} turns/s`);
  const reader = { streaming, idle };
  const inputs = modelInputs(perTurn, streamed, reader, load);
  return {
    turns: TURNS,
    perTurn,
    streamed,
    reader,
    load,
    inputs,
    fleet: FLEET,
    limits: LIMITS,
    plan: capacityPlan(inputs, FLEET, LIMITS),
  };
}
