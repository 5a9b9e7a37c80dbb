/** What every bench section shares: the server, the clients, the worker processes, the settings, the log. */
import type { Client } from '@temporalio/client';
import type { AgentClient } from '../client/agent-client.js';
import type { DevServer } from '../dev/dev-server.js';
import type { WorkerProcess } from './workers.js';
import type { WorkerProcessConfig } from './worker-process.js';

export const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 5));
export const ONLY = new Set(
  (
    process.env.BENCH_ONLY ??
    'overhead,history,throughput,memory,peer,batch,grade,replay,large,sandbox,codec,stream,mcp,subagents,firstrun,capacity,cache,fleetstream,limits'
  )
    .split(',')
    .map((s) => s.trim()),
);
const SECTIONS = [
  'overhead',
  'history',
  'throughput',
  'memory',
  'peer',
  'batch',
  'grade',
  'replay',
  'large',
  'sandbox',
  'codec',
  'stream',
  'mcp',
  'subagents',
  'firstrun',
  'capacity',
  'cache',
  'fleetstream',
  'limits',
];
const unknownSections = [...ONLY].filter((s) => !SECTIONS.includes(s));
if (unknownSections.length)
  throw new Error(`BENCH_ONLY: unknown section(s) ${unknownSections.join(', ')}; known: ${SECTIONS.join(', ')}`);
/** Whole-bench time budget: throughput runs as many rounds as fit, at least one (the large section comes after it). */
export const BUDGET_MS = Number(process.env.BENCH_BUDGET_S ?? 540) * 1000;

export interface Bench {
  /** performance.now() at the bench's start. */
  started: number;
  log(line: string): void;
  server: DevServer;
  /** The dev server's Prometheus endpoint (`--metrics-port`): its own request and action counters. */
  metricsUrl: string;
  client: Client;
  /** Keel clients on the main worker's two Keel task queues. */
  keel1: AgentClient;
  keel2: AgentClient;
  /** The main worker process (Keel queues and the bench queue). */
  main: WorkerProcess;
  /** Every worker process started so far (stopped at the end). */
  workers: WorkerProcess[];
  spawnWorker(
    name: string,
    keelQueues: string[],
    benchQueue: string | undefined,
    exposeGc?: boolean,
    /** Payload encryption of some Keel queues (bench/codec.ts), MCP servers, the fleet stream transport. */
    extra?: Pick<
      WorkerProcessConfig,
      'encryptedQueues' | 'encryptionKeys' | 'mcpQueues' | 'mcpServers' | 'streamRedis' | 'floorQueues'
    >,
  ): WorkerProcess;
  keelBundlePath: string;
  benchBundlePath: string;
}
