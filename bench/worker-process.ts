/**
 * A benchmark worker process (forked by bench/main.ts, IPC channel). It runs Keel workers (`createAgentWorker`, the
 * same function users call) on the given task queues and, optionally, the bench-only workflows (engine floor, naive
 * loop) on their own queue. It answers `rss` (VmRSS from /proc/self/status, after a GC when --expose-gc is on),
 * `stats` (the `messages`/`state` queries the activities sent, counted by wrapping the client's query handler) and
 * `stop`.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection, WorkflowClient } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { scriptedModel } from '../activities/model/scripted.js';
import { createAgentWorker, type AgentWorker } from '../worker/create-worker.js';
import { parseKeyRing } from '../node-common/encryption.js';
import type { McpServers } from '../activities/mcp/config.js';
import { createBenchActivities } from './bench-activities.js';
import { fleetTicker } from './fleet-ticker.js';
import { BENCH_AGENTS, BENCH_TOOLS, READ_FILE, READ_FILE_TEXT, readTools, SCRIPTS } from './fixtures.js';

export interface WorkerProcessConfig {
  address: string;
  keelBundlePath: string;
  keelQueues: string[];
  benchBundlePath?: string;
  benchQueue?: string;
  /** More task queues of the bench-only workflows (the engine floor on two worker processes, bench/throughput.ts). */
  floorQueues?: string[];
  identity: string;
  /** Keel queues whose worker encrypts payloads with `encryptionKeys` (a key file's JSON; bench/codec.ts). */
  encryptedQueues?: string[];
  encryptionKeys?: string;
  /** Keel queues whose worker has the MCP servers `mcpServers` (bench/mcp.ts). */
  mcpQueues?: string[];
  mcpServers?: McpServers;
  /** Keel queues whose worker appends the model's deltas to the Redis at `url` (the fleet stream transport). */
  streamRedis?: { url: string; queues: string[] };
}

/** Queries of one type: how many, their total latency, and (for `messages`) how many messages they returned. */
export interface QueryStats {
  count: number;
  ms: number;
  messages: number;
}

export type ToWorker =
  { type: 'rss'; id: number } | { type: 'stats'; id: number; reset?: boolean } | { type: 'stop'; id: number };
export type FromWorker =
  | { type: 'ready'; pid: number }
  | { type: 'rss'; id: number; rssBytes: number; heapUsed: number; external: number; arrayBuffers: number }
  | { type: 'stats'; id: number; queries: Record<string, QueryStats>; cpuMs: number }
  | { type: 'stopped'; id: number }
  | { type: 'error'; message: string };

const config = JSON.parse(process.env.KEEL_BENCH_WORKER ?? '{}') as WorkerProcessConfig;
const send = (m: FromWorker) => process.send?.(m);

// Count the queries Keel's activities send (the transcript is read through the `messages` query).
let queries: Record<string, QueryStats> = {};
const proto = WorkflowClient.prototype as unknown as {
  _queryWorkflowHandler: (input: { queryType: string }) => Promise<unknown>;
};
const original = proto._queryWorkflowHandler;
proto._queryWorkflowHandler = async function (this: unknown, input: { queryType: string }) {
  const started = performance.now();
  let messages = 0;
  try {
    const result = await original.call(this, input);
    const page = result as { messages?: unknown[] } | undefined;
    if (Array.isArray(page?.messages)) messages = page.messages.length;
    return result;
  } finally {
    const q = (queries[input.queryType] ??= { count: 0, ms: 0, messages: 0 });
    q.count += 1;
    q.ms += performance.now() - started;
    q.messages += messages;
  }
};

function rssBytes(): number {
  const line = readFileSync('/proc/self/status', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('VmRSS:'));
  return Number(line?.match(/(\d+)/)?.[1] ?? 0) * 1024;
}

Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
});

// the workspace of the read tools (bench/local-read.ts): one small file, removed when the process exits
const workspace = mkdtempSync(join(tmpdir(), 'keel-bench-read-'));
writeFileSync(join(workspace, READ_FILE), READ_FILE_TEXT);
process.on('exit', () => rmSync(workspace, { recursive: true, force: true }));

const keel: AgentWorker[] = [];
const others: Worker[] = [];
try {
  for (const taskQueue of config.keelQueues) {
    keel.push(
      await createAgentWorker({
        address: config.address,
        taskQueue,
        tools: [...BENCH_TOOLS, ...readTools(workspace)],
        agents: BENCH_AGENTS,
        models: { scripted: scriptedModel(SCRIPTS), tick: fleetTicker() },
        workflowBundle: { codePath: config.keelBundlePath },
        stream: config.streamRedis?.queues.includes(taskQueue) ? { redis: config.streamRedis.url } : false,
        identity: `${config.identity}@${taskQueue}`,
        encryption:
          config.encryptedQueues?.includes(taskQueue) && config.encryptionKeys
            ? { keyRing: parseKeyRing(config.encryptionKeys, 'the bench key') }
            : false,
        ...(config.mcpQueues?.includes(taskQueue) && config.mcpServers ? { mcpServers: config.mcpServers } : {}),
      }),
    );
  }
  if (config.benchBundlePath && (config.benchQueue || config.floorQueues?.length)) {
    const connection = await NativeConnection.connect({ address: config.address });
    /** A worker of the bench-only workflows (or, without `bundle`, of their activities only) on `taskQueue`. */
    const benchWorker = async (taskQueue: string, bundle?: string) =>
      Worker.create({
        connection,
        taskQueue,
        activities: createBenchActivities({
          client: new Client({ connection: await Connection.connect({ address: config.address }) }),
        }),
        ...(bundle ? { workflowBundle: { codePath: bundle } } : {}),
        identity: `${config.identity}@${taskQueue}`,
        // as createAgentWorker
        maxHeartbeatThrottleInterval: '1s',
        defaultHeartbeatThrottleInterval: '1s',
      });
    if (config.benchQueue) {
      others.push(await benchWorker(config.benchQueue, config.benchBundlePath));
      // the floor variant whose tool activity goes to another task queue, as Keel's go to `<taskQueue>-tools`
      others.push(await benchWorker(`${config.benchQueue}-tools`));
    }
    for (const taskQueue of config.floorQueues ?? []) others.push(await benchWorker(taskQueue, config.benchBundlePath));
  }
} catch (err) {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
}

const running = [...keel.map((w) => w.run()), ...others.map((w) => w.run())];
for (const r of running) r.catch((err) => send({ type: 'error', message: String(err) }));

process.on('message', async (m: ToWorker) => {
  if (m.type === 'rss') {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (gc) {
      gc();
      gc();
    }
    const mem = process.memoryUsage();
    send({
      type: 'rss',
      id: m.id,
      rssBytes: rssBytes(),
      heapUsed: mem.heapUsed,
      external: mem.external,
      arrayBuffers: mem.arrayBuffers,
    });
  } else if (m.type === 'stats') {
    const cpu = process.cpuUsage();
    send({ type: 'stats', id: m.id, queries, cpuMs: (cpu.user + cpu.system) / 1000 });
    if (m.reset) queries = {};
  } else if (m.type === 'stop') {
    await Promise.all([
      ...keel.map((w) => w.shutdown()),
      ...others.map(async (w) => (w.getState() === 'RUNNING' ? w.shutdown() : undefined)),
    ]);
    await Promise.allSettled(running);
    send({ type: 'stopped', id: m.id });
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', pid: process.pid });
