/** Section 3 of the bench: turns per second of many concurrent runs on one worker process and on two. */
import type { Client } from '@temporalio/client';
import { randomUUID } from 'node:crypto';
import { type AgentClient } from '../client/agent-client.js';
import { QUEUE } from './fixtures.js';
import { fmt, pairedRatio, percentile, summarize } from './stats.js';
import { ROUNDS, ONLY, BUDGET_MS, type Bench } from './context.js';
import { keelInput } from './runs.js';
import { childPid, procCpuMs } from './proc.js';

const THROUGHPUT_RUNS = 200;
const THROUGHPUT_TURNS = 10;

export async function throughputSection(b: Bench) {
  const { log, client, keel1, keel2, main, workers, spawnWorker, started } = b;
  log(
    `throughput: ${THROUGHPUT_RUNS} concurrent ${THROUGHPUT_TURNS}-turn runs, 1 worker process vs 2, warm-up then up to ${ROUNDS} rounds within the time budget`,
  );
  const second = spawnWorker('second', [QUEUE.keel2], undefined, false, { floorQueues: [QUEUE.bench2] });
  log(`worker process second pid ${await second.ready}`);
  const serverPid = childPid('temporal');
  if (!ONLY.has('overhead')) await batch(keel1, 20);
  await batch(keel2, 20);
  const one: Batch[] = [];
  const two: Batch[] = [];
  const floor: Batch[] = [];
  /** The engine floor on the same two worker processes: what a second process gives on this machine without Keel. */
  const floorTwo: Batch[] = [];
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
    const heap = await main.rss();
    log(
      `  round ${r + 1}: 1 worker ${fmt(a.turnsPerSecond)} turns/s (p50 ${fmt(a.p50Ms)} ms, p99 ${fmt(a.p99Ms)} ms); 2 workers ${fmt(b.turnsPerSecond)} turns/s (p50 ${fmt(b.p50Ms)} ms, p99 ${fmt(b.p99Ms)} ms); main worker heap ${fmt(heap.heapUsed / 2 ** 20, 0)} MiB, RSS ${fmt(heap.rssBytes / 2 ** 20, 0)} MiB`,
    );
    // The engine floor under the same load, when the budget allows (context for the turns/s target).
    if (BUDGET_MS - (performance.now() - started) > a.wallMs * 1.1 + 20_000) {
      w0 = await main.cpuMs();
      s0 = procCpuMs(serverPid);
      const f = await floorBatch(client, THROUGHPUT_RUNS, QUEUE.bench);
      f.workerCpuMsPerTurn = ((await main.cpuMs()) - w0) / turns;
      f.serverCpuMsPerTurn = (procCpuMs(serverPid) - s0) / turns;
      floor.push(f);
      w0 = (await main.cpuMs()) + (await second.cpuMs());
      s0 = procCpuMs(serverPid);
      const f2 = await floorBatch(client, THROUGHPUT_RUNS, QUEUE.bench2);
      f2.workerCpuMsPerTurn = ((await main.cpuMs()) + (await second.cpuMs()) - w0) / turns;
      f2.serverCpuMsPerTurn = (procCpuMs(serverPid) - s0) / turns;
      floorTwo.push(f2);
      log(
        `  round ${r + 1}: engine floor, 1 worker ${fmt(f.turnsPerSecond)} turns/s (p50 ${fmt(f.p50Ms)} ms, p99 ${fmt(f.p99Ms)} ms); 2 workers ${fmt(f2.turnsPerSecond)} turns/s`,
      );
    }
    const roundMs = performance.now() - roundStart;
    const left = BUDGET_MS - (performance.now() - started);
    if (r + 1 < ROUNDS && left < roundMs * 1.1 + 20_000) {
      log(
        `  stopping after ${r + 1} round(s): ${fmt(left / 1000, 0)} s of the ${BUDGET_MS / 1000} s budget left, a round takes ${fmt(roundMs / 1000, 0)} s`,
      );
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
    floorTwoWorkers: floorTwo.length ? pick(floorTwo) : null,
    floorTwoOverOne: floorTwo.length
      ? pairedRatio(
          floorTwo.map((x) => x.turnsPerSecond),
          floor.map((x) => x.turnsPerSecond),
        )
      : null,
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

async function floorBatch(client: Client, runs: number, taskQueue: string): Promise<Batch> {
  const t0 = performance.now();
  const latencies = await Promise.all(
    Array.from({ length: runs }, async () => {
      const t = performance.now();
      const handle = await client.workflow.start('floorWorkflow', {
        taskQueue,
        workflowId: `bench-floor-tp-${randomUUID()}`,
        args: [THROUGHPUT_TURNS, {}],
      });
      await handle.result();
      return performance.now() - t;
    }),
  );
  const wallMs = performance.now() - t0;
  const sorted = latencies.sort((a, b) => a - b);
  return {
    wallMs,
    turnsPerSecond: (runs * THROUGHPUT_TURNS) / (wallMs / 1000),
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
  };
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
  return {
    wallMs,
    turnsPerSecond: (runs * THROUGHPUT_TURNS) / (wallMs / 1000),
    p50Ms: percentile(sorted, 50),
    p99Ms: percentile(sorted, 99),
  };
}
