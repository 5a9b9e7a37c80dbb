/**
 * Section fleetstream (`BENCH_ONLY=fleetstream`, issue 38 item 3): BENCH_FLEET_RUNS (default 200) concurrent streamed
 * runs of BENCH_FLEET_TURNS (default 10) turns, each read by one `handle.stream()` reader in this process, once per
 * transport: the heartbeats (the default: readers poll Temporal) and the fleet transport (a `redis-server` this section
 * starts on a free port; readers block on it). The runs' worker is a bench worker process of its own
 * (bench/fleet-ticker.ts's model: every token stamped with the wall-clock ms it left the provider). Per transport:
 * Temporal frontend RPCs per second (the server's counters, bench/server-metrics.ts) and the readers' own RPCs per
 * turn (counted on their connection), server, worker and reader (this process) CPU per turn, and token → consumer
 * p50/p95/p99. BENCH_CPU_PROF=<dir>: a CPU profile of the readers per transport (see `profiled`).
 */
import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { Client } from '@temporalio/client';
import { countingConnection } from './counting-connection.js';
import { AgentClient } from '../client/agent-client.js';
import { setFleetStream } from '../client/fleet-stream/registry.js';
import { temporalAsks } from '../client/fleet-stream/store-reader.js';
import { keelDataConverter } from '../node-common/payload-storage.js';
import { RedisServer } from '../test/temporal/redis-server.js';
import type { Bench } from './context.js';
import { FLEET_TOKENS, tokenStamps } from './fleet-ticker.js';
import { childPid, procCpuMs } from './proc.js';
import { diffCounters, scrapeCounters, total } from './server-metrics.js';
import { percentile } from './stats.js';
import type { Percentiles } from './stream-latency.js';

const RUNS = Math.max(1, Number(process.env.BENCH_FLEET_RUNS ?? 200));
const TURNS = Math.max(1, Number(process.env.BENCH_FLEET_TURNS ?? 10));
/** Longer than the server takes to publish its counters (bench/capacity.ts). */
const REPORTING_WAIT_MS = 2500;

/** One transport's figures. */
export interface FleetFigures {
  runs: number;
  turns: number;
  seconds: number;
  /** Every frontend RPC (workers and readers) per second, and the readers' own RPCs per reader per turn. */
  frontendRpcsPerSecond: number;
  readerRpcsPerTurn: number;
  readerRpcsByMethodPerTurn: Record<string, number>;
  serverCpuMsPerTurn: number;
  workerCpuMsPerTurn: number;
  readerCpuMsPerTurn: number;
  /** ms from a token leaving the provider to its event at the reader. */
  tokenMs: Percentiles;
  /** Why the fleet readers asked Temporal (`describe:<cause>`, `read:<cause>`), per turn (fleet transport only). */
  readerAsksPerTurn: Record<string, number>;
  /** Readers that fell back to the heartbeats (fleet transport only; 0 expected). */
  fallbacks: number;
}

export interface FleetStreamResult {
  heartbeat: FleetFigures;
  store: FleetFigures;
}

const settle = () => new Promise((r) => setTimeout(r, REPORTING_WAIT_MS));
const cpuMs = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000;

function percentiles(xs: number[]): Percentiles {
  const sorted = [...xs].sort((a, b) => a - b);
  return { n: xs.length, p50: percentile(sorted, 50), p95: percentile(sorted, 95), p99: percentile(sorted, 99) };
}

/** An agent client on `queue` whose connection counts its RPCs by method, reading through `transport`. */
async function readerClient(b: Bench, queue: string, redis: string | undefined) {
  const { connection, calls } = await countingConnection(b.server.address);
  const client = new Client({ connection, dataConverter: keelDataConverter() });
  setFleetStream(client.workflow, redis ? { redis } : false);
  return { agent: new AgentClient(client, queue), calls };
}

/**
 * With BENCH_CPU_PROF=<dir>: a V8 CPU profile of this process (the readers) while `name`'s runs are read, saved as
 * `<dir>/fleet-readers-<name>.cpuprofile` (open it in Chrome's DevTools); the profiler's own cost is in the figures.
 */
async function profiled<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const dir = process.env.BENCH_CPU_PROF;
  if (!dir) return fn();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await fn();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    await writeFile(`${dir}/fleet-readers-${name}.cpuprofile`, JSON.stringify(profile));
    session.disconnect();
  }
}

/** One run read by one reader: the token → consumer latencies it saw, and whether it fell back. */
async function readOne(agent: AgentClient, latencies: number[]): Promise<boolean> {
  const h = await agent.start(
    { model: `tick/fleet`, prompt: 'go', tools: ['noop'], maxTurns: TURNS },
    { workflowId: `bench-fleet-${randomUUID()}` },
  );
  const seen = new Set<number>();
  let fellBack = false;
  for await (const e of h.stream({ onTransport: (t) => (fellBack ||= t === 'heartbeat') })) {
    if (e.type !== 'message_update' || e.kind !== 'text') continue;
    const now = Date.now();
    for (const stamp of tokenStamps(e.delta)) {
      const key = stamp * 1000 + e.messageIndex; // one token a stamp per message
      if (seen.has(key)) continue;
      seen.add(key);
      latencies.push(now - stamp);
    }
  }
  return fellBack;
}

async function measure(b: Bench, queue: string, redis: string | undefined, worker: Bench['main']) {
  const { agent, calls } = await readerClient(b, queue, redis);
  const serverPid = childPid('temporal');
  try {
    await settle();
    const c0 = await scrapeCounters(b.metricsUrl);
    const [s0, w0, cpu0, t0] = [procCpuMs(serverPid), await worker.cpuMs(), process.cpuUsage(), performance.now()];
    const latencies: number[] = [];
    for (const k of Object.keys(temporalAsks)) delete temporalAsks[k];
    const reads = () => Promise.all(Array.from({ length: RUNS }, () => readOne(agent, latencies)));
    const fell = await profiled(redis ? 'redis' : 'heartbeat', reads);
    const [cpu, seconds] = [cpuMs(process.cpuUsage(cpu0)), (performance.now() - t0) / 1000];
    const [s1, w1] = [procCpuMs(serverPid), await worker.cpuMs()];
    await settle();
    const counters = diffCounters(c0, await scrapeCounters(b.metricsUrl));
    const turns = RUNS * TURNS;
    const { StartWorkflowExecution: _start, ...readCalls } = calls;
    return {
      runs: RUNS,
      turns: TURNS,
      seconds,
      frontendRpcsPerSecond: total(counters.frontend) / seconds,
      readerRpcsPerTurn: total(readCalls) / turns,
      readerRpcsByMethodPerTurn: Object.fromEntries(Object.entries(readCalls).map(([k, v]) => [k, v / turns])),
      serverCpuMsPerTurn: (s1 - s0) / turns,
      workerCpuMsPerTurn: (w1 - w0) / turns,
      readerCpuMsPerTurn: cpu / turns,
      tokenMs: percentiles(latencies),
      readerAsksPerTurn: Object.fromEntries(Object.entries(temporalAsks).map(([k, v]) => [k, v / turns])),
      fallbacks: fell.filter(Boolean).length,
    } satisfies FleetFigures;
  } finally {
    await agent.close();
  }
}

export async function fleetStreamSection(b: Bench): Promise<FleetStreamResult> {
  const redis = await RedisServer.start();
  const queues = { heartbeat: `bench-fleet-hb-${randomUUID()}`, store: `bench-fleet-redis-${randomUUID()}` };
  const worker = b.spawnWorker('fleet', [queues.heartbeat, queues.store], undefined, false, {
    streamRedis: { url: redis.url, queues: [queues.store] },
  });
  try {
    b.log(
      `fleetstream: worker process pid ${await worker.ready}; ${RUNS} runs × ${TURNS} turns × ${FLEET_TOKENS} tokens`,
    );
    const line = (name: string, f: FleetFigures) =>
      b.log(
        `  ${name}: ${f.frontendRpcsPerSecond.toFixed(0)} frontend RPCs/s, reader ${f.readerRpcsPerTurn.toFixed(2)} RPCs/turn, ` +
          `CPU/turn server ${f.serverCpuMsPerTurn.toFixed(1)} ms, reader ${f.readerCpuMsPerTurn.toFixed(1)} ms; ` +
          `token p50/p95/p99 ${f.tokenMs.p50.toFixed(0)}/${f.tokenMs.p95.toFixed(0)}/${f.tokenMs.p99.toFixed(0)} ms`,
      );
    const heartbeat = await measure(b, queues.heartbeat, undefined, worker);
    line('heartbeat', heartbeat);
    const store = await measure(b, queues.store, redis.url, worker);
    line('redis', store);
    const perTurn = (r: Record<string, number>) =>
      Object.entries(r)
        .sort(([a], [b]) => a.localeCompare(b))
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ');
    b.log(`  redis reader RPCs/turn by method: ${perTurn(store.readerRpcsByMethodPerTurn)}`);
    b.log(`  redis reader asks/turn by cause: ${perTurn(store.readerAsksPerTurn)}; fallbacks ${store.fallbacks}`);
    return { heartbeat, store };
  } finally {
    await worker.stop();
    await redis.kill();
  }
}
