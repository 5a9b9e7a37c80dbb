/**
 * `npm run bench`: Keel's performance against the engine floor, Pi in process and the peer @temporalio/ai-sdk, on one
 * Temporal dev server.
 *
 * 1. Per-turn overhead: 20-turn scripted runs (one no-op tool call per turn) through `agentWorkflow`, the engine floor
 *    (`floorWorkflow`: one model + one tool activity per turn, no logic), floor variants that add one Keel extra each
 *    (heartbeat, query, search-attribute upsert, the tool activity on another task queue) and Pi's in-process
 *    `agentLoop`, interleaved; CPU per turn of the worker process and the server; where a Keel turn's time goes
 *    (history timestamps, queries, workflow-code replay: CPU and promises per turn, bench/replay-cost.ts).
 * 2. History growth: one 500-turn run whose tool results are 20 KiB each, and the naive full-transcript loop.
 * 3. Throughput: 200 concurrent 10-turn runs on one worker process, and on two, interleaved (run last: as many rounds
 *    as the time budget allows, at least one); the engine floor's batch when it fits.
 * 4. Memory: worker RSS with 0, 100 and 500 sessions parked waiting for a follow-up, and a minimal parked workflow.
 * 5. Large transcripts: the 2,000-turn run with 50 KB tool results (≈100 MB of transcript; about 3 min): turns, runs
 *    in its continue-as-new chain, the largest run's history, history bytes per turn, the transcript's size, the time.
 *    After throughput, the peer and the batch, outside the time budget.
 * 6. Peer: `@temporalio/ai-sdk` (the AI SDK's `generateText` loop in a workflow through `temporalProvider` and
 *    `AiSdkPlugin`, the AI SDK's mock language model as the activity-side provider, the same scripted replies and
 *    no-op tool) beside Keel's agentWorkflow and the engine floor on the same dev server: ms per turn, CPU per turn and
 *    history bytes per turn of 10-, 100- and 500-turn runs, then one 1,000-turn peer run to see where it stops. The
 *    peer pins @temporalio/* 1.23.0, so bench/peer-ai-sdk/ is its own package (exact pins, committed lock), installed
 *    on first use by `npm ci` into `${XDG_CACHE_HOME:-~/.cache}/keel/bench-peer-ai-sdk-<hash of its lock>` (reused
 *    after; about 15 s, ~290 MB), its worker a process of its own on this Node; if the install or the worker fails the
 *    section says "not run: <reason>" and the bench goes on. After throughput.
 * 7. Batch: 2,000 one-turn tasks through `agentBatchWorkflow` against the same tasks started directly by a client at
 *    the same concurrency (tasks/min), and the children running across each of the batch's continues-as-new.
 * 8. Sandbox: one `bash` call (`echo ok`) unsandboxed and in bubblewrap, alternately: the added ms per call
 *    (bench/sandbox.ts; BENCH_SANDBOX_CALLS pairs, default 100).
 * 9. Stream: token → `handle.stream()` consumer latency p50/p95/p99 over ≥ 1,000 tokens beside the provider consumed
 *    directly, history bytes per turn streaming on and off, and CPU per turn streamed and read, streamed unread and
 *    off (bench/stream-latency.ts).
 * 13. First run: from a fresh process to its first completed 2-turn run, phase by phase (Node's boot, the imports,
 *    createAgentWorker, ready, the run), for the compiled package and for the sources with the workflow bundle cache
 *    empty and warm (bench/first-run.ts; builds dist/ first unless BENCH_FIRSTRUN_BUILD=0).
 * 14. Capacity: the inputs of the fleet capacity model (docs/capacity.md) — per plain turn the server's frontend,
 *    history and persistence requests (its own counters, from the dev server's metrics endpoint), billable actions,
 *    history bytes, worker and server CPU; what streaming adds per second; a live reader's RPCs/s and CPU; turns/s
 *    under load — and what 10,000 runs and 1,000 readers need from them (bench/capacity.ts, bench/capacity-model.ts).
 * 15. Cache: the cached share of input tokens of a 20-turn run against the mock Anthropic provider with a prompt cache,
 *    with cacheRetention `short` (the default) and `none` (bench/prompt-cache.ts).
 * 16. Fleet stream: N concurrent streamed runs each with one reader (BENCH_FLEET_RUNS, default 200), on the heartbeat
 *    transport and on the fleet transport (a redis-server the section starts): frontend RPCs/s, reader RPCs per turn,
 *    server and reader CPU per turn, token → consumer p50/p95/p99 (bench/fleet-stream.ts; in latest.json).
 *
 * This file sets up and reports; the sections are overhead.ts, history-growth.ts, throughput.ts, memory.ts, peer.ts,
 * batch.ts, large-transcript.ts, sandbox.ts, codec.ts, stream-latency.ts, mcp.ts, capacity.ts and fleet-stream.ts, sharing
 * context.ts (server, clients, worker processes) and runs.ts; report.ts renders the table.
 * Prints a Markdown table (stdout) and writes bench/results/latest.json (git-ignored); with BENCH_WRITE_DOCS=1 a whole run
 * also puts that table into docs/performance.md (bench/write-docs.ts). Progress goes to stderr.
 * Environment: BENCH_ROUNDS (default 5), BENCH_ONLY (comma list of overhead,history,memory,throughput,peer,batch,grade,replay,large,sandbox,codec,stream,mcp,subagents,firstrun,capacity,cache,fleetstream,limits;
 * e.g. `BENCH_ONLY=large npm run bench`), BENCH_LARGE_TURNS (default 2000: the large section's turns, fewer for a quick
 * check), BENCH_PEER_LIMIT_TURNS (default 1000: the peer's where-it-stops run, 0 to skip),
 * BENCH_BATCH_TASKS (default 2000), BENCH_BATCH_CONCURRENCY (default 20), BENCH_GRADE_TASKS (default 200: bench/grade.ts),
 * BENCH_REPLAY_RUNS (default 50) and BENCH_REPLAY_TURNS (default 5: bench/replay.ts),
 * BENCH_BUDGET_S (default 540), BENCH_STOCK_SERVER=1 (dev server without the transfer-queue setting below),
 * BENCH_CPU_PROF=<dir> (V8 CPU profiles of the worker processes; with the overhead section also the histories of its
 * profiled Keel run and of a floor run, keel-history.json and floor-history.json, and profiles of their replays,
 * replay-keel.cpuprofile and replay-floor.cpuprofile: bench/replay-cost.ts), KEEL_BENCH_PI_AGENT_CORE (path to pi-agent-core's
 * dist/index.js when the package is not installed).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { bundleWorkflowCode, DefaultLogger, Runtime } from '@temporalio/worker';
import { AgentClient } from '../client/agent-client.js';
import { startDevServer } from '../dev/dev-server.js';
import { ensureTemporalCli } from '../scripts/temporal-cli.mjs';
import { WORKFLOWS_PATH } from '../worker/create-worker.js';
import { keelDataConverter } from '../node-common/payload-storage.js';
import { QUEUE } from './fixtures.js';
import { WorkerProcess } from './workers.js';
import type { WorkerProcessConfig } from './worker-process.js';
import { ONLY, ROUNDS, type Bench } from './context.js';
import { batchSection } from './batch.js';
import { gradeSection } from './grade.js';
import { replaySection } from './replay.js';
import { historySection } from './history-growth.js';
import { largeSection } from './large-transcript.js';
import { memorySection } from './memory.js';
import { overheadSection } from './overhead.js';
import { peerSection } from './peer.js';
import { markdown } from './report.js';
import { writeDocs } from './write-docs.js';
import { throughputSection } from './throughput.js';
import { sandboxSection } from './sandbox.js';
import { codecSection } from './codec.js';
import { mcpSection } from './mcp.js';
import { subagentsSection } from './subagents.js';
import { streamSection } from './stream-latency.js';
import { firstRunSection } from './first-run.js';
import { capacitySection } from './capacity.js';
import { cacheSection } from './prompt-cache.js';
import { limitsSection } from './provider-limits.js';
import { fleetStreamSection } from './fleet-stream.js';
import { freePort } from './server-metrics.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const started = performance.now();
const loadAtStart = loadavg();
const log = (s: string) =>
  process.stderr.write(`[bench ${((performance.now() - started) / 1000).toFixed(1).padStart(5)}s] ${s}\n`);

// ---------------------------------------------------------------------------------------------------------------------
// Setup: one dev server, the two workflow bundles, the main worker process.

Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
});
const cliPath = await ensureTemporalCli({ log });
const temporalVersion = execFileSync(cliPath, ['--version'], { encoding: 'utf8' }).trim();
/**
 * The dev server runs one history shard, whose transfer queue (which hands workflow and activity tasks to matching)
 * reads at most `history.transferProcessorMaxPollRPS` = 20 times a second by default: every task dispatch then waits
 * up to 50 ms, ~200 ms per turn whatever the workflow does. Raised here so the loop's own costs are visible;
 * BENCH_STOCK_SERVER=1 keeps the stock settings.
 */
const metricsPort = await freePort();
const SERVER_ARGS = [
  ...(process.env.BENCH_STOCK_SERVER ? [] : ['--dynamic-config-value', 'history.transferProcessorMaxPollRPS=1000']),
  // the server's own request and action counters (bench/capacity.ts)
  '--metrics-port',
  String(metricsPort),
  '--log-level',
  'error',
];
const server = await startDevServer({ log, extraArgs: SERVER_ARGS });
const address = server.address;
// History pages of the naive run hold events of several MB each.
const connection = await Connection.connect({
  address,
  channelArgs: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 },
});
// the workers offload payloads over 256 KiB (a long run's result) to Keel's default store: the client reads them there
const client = new Client({ connection, dataConverter: keelDataConverter() });
const keel1 = new AgentClient(client, QUEUE.keel1);
const keel2 = new AgentClient(client, QUEUE.keel2);

const bundleDir = mkdtempSync(join(tmpdir(), 'keel-bench-'));
const quiet = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn: (m: string) => log(`[bundler] ${m}`),
  error: (m: string) => log(`[bundler] ${m}`),
};
const keelBundlePath = join(bundleDir, 'keel.js');
const benchBundlePath = join(bundleDir, 'bench.js');
writeFileSync(keelBundlePath, (await bundleWorkflowCode({ workflowsPath: WORKFLOWS_PATH, logger: quiet })).code);
writeFileSync(
  benchBundlePath,
  (
    await bundleWorkflowCode({
      workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
      logger: quiet,
    })
  ).code,
);
log(`bundles in ${bundleDir}`);

const workers: WorkerProcess[] = [];
function spawnWorker(
  name: string,
  keelQueues: string[],
  benchQueue: string | undefined,
  exposeGc = false,
  extra: Pick<
    WorkerProcessConfig,
    'encryptedQueues' | 'encryptionKeys' | 'mcpQueues' | 'mcpServers' | 'streamRedis' | 'floorQueues'
  > = {},
): WorkerProcess {
  const w = WorkerProcess.spawn(
    name,
    {
      address,
      keelBundlePath,
      keelQueues,
      identity: `bench-${name}`,
      ...(benchQueue || extra.floorQueues ? { benchBundlePath } : {}),
      ...(benchQueue ? { benchQueue } : {}),
      ...extra,
    },
    { exposeGc },
  );
  workers.push(w);
  return w;
}
const main = spawnWorker('main', [QUEUE.keel1, QUEUE.keel2], QUEUE.bench, false, { floorQueues: [QUEUE.bench2] });
log(`worker process main pid ${await main.ready}`);

const bench: Bench = {
  started,
  log,
  server,
  metricsUrl: `http://127.0.0.1:${metricsPort}/metrics`,
  client,
  keel1,
  keel2,
  main,
  workers,
  spawnWorker,
  keelBundlePath,
  benchBundlePath,
};
const results: Record<string, unknown> = {};
let exitCode = 0;
try {
  if (ONLY.has('overhead')) results.overhead = await overheadSection(bench);
  if (ONLY.has('history')) results.history = await historySection(bench);
  if (ONLY.has('memory')) results.memory = await memorySection(bench);
  if (ONLY.has('throughput')) results.throughput = await throughputSection(bench);
  if (ONLY.has('peer')) results.peer = await peerSection(bench);
  if (ONLY.has('batch')) results.batch = await batchSection(bench);
  if (ONLY.has('grade')) results.grade = await gradeSection(bench);
  if (ONLY.has('replay')) results.replay = await replaySection(bench);
  if (ONLY.has('large')) results.large = await largeSection(bench);
  if (ONLY.has('sandbox')) results.sandbox = await sandboxSection(bench);
  if (ONLY.has('codec')) results.codec = await codecSection(bench);
  if (ONLY.has('stream')) results.stream = await streamSection(bench);
  if (ONLY.has('mcp')) results.mcp = await mcpSection(bench);
  if (ONLY.has('subagents')) results.subagents = await subagentsSection(bench);
  if (ONLY.has('firstrun')) results.firstrun = await firstRunSection(bench);
  if (ONLY.has('capacity')) results.capacity = await capacitySection(bench);
  if (ONLY.has('cache')) results.cache = await cacheSection(bench);
  if (ONLY.has('fleetstream')) results.fleetstream = await fleetStreamSection(bench);
  if (ONLY.has('limits')) results.limits = await limitsSection(bench);
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
  machine: {
    cpus: availableParallelism(),
    cpuModel: cpus()[0]?.model,
    node: process.version,
    loadAverageAtStart: loadAtStart,
    loadAverageAtEnd: loadavg(),
  },
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
if (process.env.BENCH_WRITE_DOCS === '1' && exitCode === 0)
  log(await writeDocs(join(ROOT, 'docs/performance.md'), markdown(report), process.env.BENCH_ONLY === undefined));
process.exit(exitCode);
