/**
 * Provider limits shared by every run (issue 36 items 1–2, docs/provider-limits.md), against a mock Anthropic API that
 * enforces its limits as the real one does (429 with `retry-after` over a limit: test/mock-providers/limits.ts).
 *
 * Scale: the issue's test is 60 requests/min with three batches of 200 tasks (a 10-minute busy window). Here the key
 * allows 300 requests/min (the workers' buckets hold 3 s of it, the mock's 5 s: LIMIT below) and three batches of 50
 * one-turn tasks plus one interactive run send 151 requests: five times the rate, a quarter of the requests, every
 * run far over the limit at once, in a file that runs in about 45 seconds. (At 600 requests/min this loaded machine
 * starts the batches' tasks hardly faster than the limit lets them go: no line for the interactive run to overtake.)
 * Each worker's attempts ask through its limits client, one batched Update per tick (activities/limits/client.ts).
 *
 * The scale is set by the environment (defaults: the above): KEEL_LIMITS_BATCHES, KEEL_LIMITS_TASKS (per batch),
 * KEEL_LIMITS_TURNS (task i takes 1 + i mod TURNS turns, each turn but the last calling a `step` tool),
 * KEEL_LIMITS_RPM, KEEL_LIMITS_TPM (input tokens/min), KEEL_LIMITS_BURST and KEEL_LIMITS_MOCK_BURST (seconds of the
 * limit the workers' and the mock's buckets hold). The issue's full scale (docs/provider-limits.md), not in the suite:
 *   KEEL_LIMITS_BATCHES=3 KEEL_LIMITS_TASKS=200 KEEL_LIMITS_TURNS=5 KEEL_LIMITS_RPM=60 KEEL_LIMITS_TPM=100000 \
 *     npx vitest run --project heavy test/temporal/provider-limits.test.ts -t 'share one key'
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { piAiProvider } from '../../activities/model/pi-ai.js';
import { startBatch } from '../../cli/commands/batch.js';
import { limiterWorkflowId, type ProviderLimit } from '../../common/limits/definition.js';
import type { LimiterSnapshot } from '../../common/limits/ledger.js';
import { PROVIDER_WAIT_SIGNAL } from '../../common/limits/protocol.js';
import type { AgentBatchResult } from '../../workflows/batch/definitions.js';
import type { MockLimitsOptions } from '../mock-providers/limits.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';
import { stepTool, turnsReply } from '../mock-providers/turns.js';
import { startKeel, until, type Keel } from './harness.js';
import { limiterDrained, limiterState } from './limiter-drained.js';

const env = (name: string, fallback: number) => Number(process.env[name] ?? fallback);
const BATCHES = env('KEEL_LIMITS_BATCHES', 3);
const TASKS = env('KEEL_LIMITS_TASKS', 50);
const TURNS = env('KEEL_LIMITS_TURNS', 1);
const RPM = env('KEEL_LIMITS_RPM', 300);
/** The turns of a batch's task `i`: 1 to TURNS. */
const turnsOf = (i: number) => 1 + (i % TURNS);
/** Every model request of the batches and the interactive run. */
const REQUESTS = BATCHES * Array.from({ length: TASKS }, (_, i) => turnsOf(i)).reduce((n, t) => n + t, 0) + 1;
/** The test's time: twice the requests' time at the limit, at least two minutes. */
const TIMEOUT_MS = Math.max(120_000, ((2 * REQUESTS) / RPM) * 60_000);
// The workers' buckets hold 3 s of the limit, the mock API's 5 s (the APIs' hold 60 s). The limiter keeps 1 s of each
// bucket for the way to the provider; the 2 s between the two are the margin docs/provider-limits.md advises for stalls:
// a worker or the server stalled between a grant and the request's arrival bunches requests (at equal 2-second
// buckets: 88–94 % of the limit used on a quiet machine, 69–75 % and once a 429 at a load average of 13 on 2 cores).
const LIMIT: ProviderLimit = {
  requestsPerMinute: RPM,
  inputTokensPerMinute: env('KEEL_LIMITS_TPM', 300_000),
  burstSeconds: env('KEEL_LIMITS_BURST', 3),
};
const MOCK_LIMIT = { ...LIMIT, burstSeconds: env('KEEL_LIMITS_MOCK_BURST', 5) };
const MODEL = 'anthropic/claude-sonnet-4-5';

let running: { keel: Keel; mock: MockProviderServer } | undefined;
afterEach(async () => {
  await running?.keel.stop();
  await running?.mock.close();
  running = undefined;
});

async function setup(
  limit = LIMIT,
  mockLimit: MockLimitsOptions = MOCK_LIMIT,
): Promise<{ keel: Keel; mock: MockProviderServer; limiter: () => Promise<LimiterSnapshot> }> {
  const mock = await startMockProvider('anthropic', { limits: mockLimit, respond: (body) => turnsReply(body) });
  const keel = await startKeel({
    models: {
      '*': piAiProvider({ baseUrls: { anthropic: mock.url }, apiKeys: { anthropic: 'test-key' }, env: {} }),
    },
    tools: [stepTool],
    providerLimits: { anthropic: limit },
    // every task's attempt waits in the limiter's line, not in the task queue's backlog
    workerOptions: { maxConcurrentActivityTaskExecutions: Math.max(200, BATCHES * TASKS + 10) },
  });
  running = { keel, mock };
  return { keel, mock, limiter: limiterState(keel.worker.client, keel.taskQueue) };
}

const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** `keel <args>` as a child process on the test's server and task queue: its stdout once it exits. */
function keelCli(keel: Keel, args: string[]): Promise<{ code: number | null; stdout: string }> {
  const child = spawn(process.execPath, [BIN, '--address', keel.address, '--task-queue', keel.taskQueue, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let stdout = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout })));
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

describe('provider limits', () => {
  it(
    'batches and an interactive run share one key: no 429, the limit used, the interactive run first',
    async () => {
      const { keel, mock, limiter } = await setup();
      const batches = await Promise.all(
        Array.from({ length: BATCHES }, (_, b) =>
          startBatch(
            keel.client,
            keel.taskQueue,
            Array.from({ length: TASKS }, (_, i) => ({
              model: MODEL,
              prompt: `batch ${b + 1} task ${i}: turns ${turnsOf(i)}, answer done`,
              ...(turnsOf(i) > 1 ? { tools: ['step'] } : {}),
            })),
            { concurrency: TASKS, batchId: `limits-${b + 1}-${randomUUID()}` },
          ),
        ),
      );
      // the interactive run starts once the batches' tasks wait in line
      await until(
        async () => (await limiter().catch(() => ({ waiting: [] }))).waiting.reduce((n, w) => n + w.count, 0) >= 5,
        60_000,
        'batch tasks waiting',
      );
      const interactive = await keel.start({ model: MODEL, prompt: 'interactive: answer done' });
      expect((await interactive.result()).status).toBe('completed');
      // the interactive run's wait, read while the limiter's last 200 grants' waits still hold it
      const [interactiveWait] = (await limiter()).recentWaits.filter((w) => w.priority === 2).map((w) => w.ms);
      for (const batch of batches) expect((await batch.result()) as AgentBatchResult).toMatchObject({ done: TASKS });

      // zero 429s: the limiter kept every run under the provider's limit
      expect(mock.limits!.rejected).toBe(0);
      expect(mock.limits!.accepted).toHaveLength(REQUESTS);
      // the limit used over the busy window: what the workers' limit allowed (a full bucket, then 10 a second)
      const at = mock.limits!.accepted.map((a) => a.at);
      const seconds = (Math.max(...at) - Math.min(...at)) / 1000;
      const allowed = (RPM / 60) * (LIMIT.burstSeconds! + seconds);
      const use = at.length / allowed;
      console.log(
        `[limits] ${at.length} requests in ${seconds.toFixed(1)} s: ${(use * 100).toFixed(0)} % of the limit`,
      );
      // the bar: ≥ 85 % of the limit over the busy window (soft: the figures below are still read and logged)
      expect.soft(use).toBeGreaterThanOrEqual(0.85);
      // the asks went batched: about one Update per grant interval (0.2 s at this rate), whatever the number waiting —
      // the per-attempt asks of 0.9.0 made thousands at 101 requests, most of them aborted
      const history = await keel.worker.client.workflow
        .getHandle(limiterWorkflowId(keel.taskQueue, 'anthropic'))
        .fetchHistory();
      const updates = history.events!.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
      console.log(`[limits] ${updates} Updates on the limiter for ${at.length} requests`);
      expect(updates).toBeLessThan(2 * at.length);
      // the interactive run (priority 2) waited less than the batch tasks (priority 4) did at the median
      const batchWaits = (await limiter()).recentWaits.filter((w) => w.priority === 4).map((w) => w.ms);
      console.log(`[limits] interactive wait ${interactiveWait} ms, batch median ${median(batchWaits)} ms`);
      expect(interactiveWait).toBeLessThan(median(batchWaits));
      // nothing left behind: no request in flight or waiting
      const last = await limiterDrained(limiter, 10_000);
      console.log(`[limits] ${mock.limits!.rejected} 429s; the limiter at the end: ${JSON.stringify(last.inUse)}`);
    },
    TIMEOUT_MS,
  );

  it('keel watch prints the wait line and keel limits lists the waiting run, each as a child process', async () => {
    // 100,000 input tokens a minute: a first run of about 97,000 fills the bucket, a second of 15,000 waits ~8 s
    const limit = { inputTokensPerMinute: 100_000 };
    const { keel, limiter } = await setup(limit, limit);
    const first = await keel.start({ model: MODEL, prompt: `first: ${'word '.repeat(77_600)}` });
    expect((await first.result()).status).toBe('completed');
    const second = await keel.start({ model: MODEL, prompt: `second: ${'word '.repeat(12_000)}` });
    const watching = keelCli(keel, ['watch', second.workflowId]);
    await until(async () => (await limiter()).waiting.length > 0, 20_000, 'the second run waiting');
    const limits = await keelCli(keel, ['limits']);
    expect(limits.code).toBe(0);
    expect(limits.stdout).toContain('anthropic  itpm=100000\n');
    expect(limits.stdout).toMatch(/\n {2}in use: .*\n/);
    expect(limits.stdout).toContain(`  waiting, priority 2: 1 (oldest `);
    expect(limits.stdout).toContain(`): ${second.workflowId}\n`);
    const watched = await watching;
    expect(watched.code).toBe(0);
    expect(watched.stdout).toMatch(/\nwaiting for anthropic tokens\/min: \d{2},\d{3} of 100,000 in use\n/);
    expect((await second.result()).status).toBe('completed');
    // its wait line changed with nearly every answer of the limiter; the run was told it once (RETELL_MS: 30 s) and
    // told when the wait ended — two signals, not one per change
    const history = await keel.client.client.workflow.getHandle(second.workflowId).fetchHistory();
    const told = history
      .events!.map((e) => e.workflowExecutionSignaledEventAttributes)
      .filter((a) => a?.signalName === PROVIDER_WAIT_SIGNAL);
    expect(told).toHaveLength(2);
  }, 120_000);
});
