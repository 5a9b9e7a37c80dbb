/**
 * Issue 36's provider-limits test at its full scale (docs/provider-limits.md "The full scale"): a mock Anthropic API at
 * 60 requests/min and 100,000 input tokens/min that answers 429 with `retry-after` over either limit, as the real one
 * does; three batches of 200 tasks of one to five turns (task i takes 1 + i mod 5) plus one interactive run started
 * once the batches' tasks wait; both worker processes SIGKILLed twice on the way (after a quarter and after half of
 * the requests), new ones taking over. Every task completes, no run sees a 429, the key's token use is ≥ 85 % of its
 * limit over the busy minutes, the interactive run's first request waits less than the batch tasks' median, and the
 * limiter ends with nothing in flight or waiting. The runs keep Keel's defaults (a 30 s heartbeat timeout: a killed
 * worker's attempts are retried within 30 s), as a fleet's would.
 *
 * 1,801 requests at the limit take about 31 minutes, longer than `npm test` may (issue 34): this file is the `fleet`
 * project, run by hand on a machine to itself (`npm run test:fleet`; beside the suites it cannot keep the limit busy:
 * docs/development.md#test-run). Each request carries about 1,650 input tokens, so the token
 * limit binds (60 of them a minute would be 99,000 to 106,000 tokens).
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { startBatch } from '../../cli/batch/start.js';
import { limitSpec, type ProviderLimit } from '../../common/limits/definition.js';
import { CLIENT_LEASE_MS } from '../../common/limits/ledger.js';
import type { AgentBatchResult } from '../../workflows/batch/definitions.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';
import { turnsReply } from '../mock-providers/turns.js';
import { killAllWorkers, replaceWorkers, workerPair } from '../temporal/child-worker.js';
import { until } from '../temporal/harness.js';
import { limiterDrained, limiterState } from '../temporal/limiter-drained.js';

const WORKER = fileURLToPath(new URL('../temporal/fixtures/limits-worker.ts', import.meta.url));
const BATCHES = 3;
/**
 * Tasks per batch: 200. `KEEL_FLEET_TASKS` scales it down to check the rest quickly; the ≥ 85 % bar needs the full
 * scale (at 10 a batch each kill's 30 s heartbeat timeout weighs on a 2.5-minute window: 59 % measured).
 */
const TASKS = Number(process.env.KEEL_FLEET_TASKS ?? 200);
const TURNS = 5;
const turnsOf = (i: number) => 1 + (i % TURNS);
/** Every model request of the batches and the interactive run: 3 × 600 + 1. */
const REQUESTS = BATCHES * Array.from({ length: TASKS }, (_, i) => turnsOf(i)).reduce((n, t) => n + t, 0) + 1;
/** The workers' limits: the issue's key. Their buckets hold 3 s of it (the limiter keeps 1 s for the way out). */
const LIMIT: ProviderLimit = { requestsPerMinute: 60, inputTokensPerMinute: 100_000, burstSeconds: 3 };
/**
 * The mock's buckets hold 10 s of the limit (the real APIs' hold 60 s): a margin for the moments a machine loaded by
 * the rest of `.ci/run` stalls a worker between a grant and the request's arrival, and for the killed workers'
 * attempts that reached the API before their kill (docs/provider-limits.md: set `burstSeconds` below the API's).
 */
const MOCK_LIMIT: ProviderLimit = { ...LIMIT, burstSeconds: 10 };
/** About 1,650 tokens of prompt (the mock counts 4 characters a token): the token limit binds, not the request rate. */
const PADDING = 'word '.repeat(1_300);
const MODEL = 'anthropic/claude-sonnet-4-5';
/** Twice the requests' time at the token limit. */
const TIMEOUT_MS = 2 * ((REQUESTS * 1_700) / LIMIT.inputTokensPerMinute!) * 60_000;

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

let mock: MockProviderServer | undefined;
afterEach(async () => {
  await mock?.close();
  mock = undefined;
});
afterAll(killAllWorkers);

describe('provider limits at the full scale of issue 36', () => {
  it(
    'three batches of 200 one- to five-turn tasks, an interactive run, workers killed twice: no 429, ≥ 85 % of the tokens, the interactive run first, nothing left',
    async () => {
      mock = await startMockProvider('anthropic', {
        limits: MOCK_LIMIT,
        respond: (body) => turnsReply(body, 30), // each call takes a while: a kill finds calls in flight
      });
      const taskQueue = `limits-full-${randomUUID()}`;
      const env = {
        KEEL_TASK_QUEUE: taskQueue,
        KEEL_MOCK_URL: mock.url,
        KEEL_PROVIDER_LIMITS: `anthropic:${limitSpec(LIMIT)}`,
        // every task's attempt waits in the limiter's line, not in the task queue's backlog
        KEEL_MAX_ACTIVITIES: String(BATCHES * TASKS + 10),
      };
      const pair = () => workerPair(WORKER, env);
      const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
      const limiter = limiterState(client.client, taskQueue);

      let workers = await pair();
      const batches = await Promise.all(
        Array.from({ length: BATCHES }, (_, b) =>
          startBatch(
            client,
            taskQueue,
            Array.from({ length: TASKS }, (_, i) => ({
              model: MODEL,
              prompt: `batch ${b + 1} task ${i}: turns ${turnsOf(i)}, answer done. ${PADDING}`,
              ...(turnsOf(i) > 1 ? { tools: ['step'] } : {}),
            })),
            { concurrency: TASKS, batchId: `limits-full-${b + 1}-${randomUUID()}` },
          ),
        ),
      );
      // the interactive run starts once the batches' tasks wait in line
      await until(
        async () => (await limiter().catch(() => ({ waiting: [] }))).waiting.reduce((n, w) => n + w.count, 0) >= 5,
        120_000,
        'batch tasks waiting',
      );
      const interactive = await client.start({ model: MODEL, prompt: `interactive: answer done. ${PADDING}` });
      expect((await interactive.result()).status).toBe('completed');
      const [interactiveWait] = (await limiter()).recentWaits.filter((w) => w.priority === 2).map((w) => w.ms);
      const batchWaits: number[] = [];

      // both workers killed after a quarter and after half of the requests; the next pair starts before
      for (const reached of [Math.floor(REQUESTS / 4), Math.floor(REQUESTS / 2)]) {
        await until(() => mock!.limits!.accepted.length >= reached, TIMEOUT_MS / 2, `${reached} requests accepted`);
        batchWaits.push(...(await limiter()).recentWaits.filter((w) => w.priority === 4).map((w) => w.ms));
        workers = await replaceWorkers(workers, pair);
      }
      for (const batch of batches) expect((await batch.result()) as AgentBatchResult).toMatchObject({ done: TASKS });
      batchWaits.push(...(await limiter()).recentWaits.filter((w) => w.priority === 4).map((w) => w.ms));

      // zero 429s: the limiter kept every run, across the kills, under the provider's limits
      expect(mock.limits!.rejected).toBe(0);
      // every request reached the API (a killed attempt that reached it before its kill is asked again: ≥)
      expect(mock.limits!.accepted.length).toBeGreaterThanOrEqual(REQUESTS);
      // the key's token use over the busy window: of what the workers' limit allowed (a full bucket, then the rate)
      const at = mock.limits!.accepted.map((a) => a.at);
      const seconds = (Math.max(...at) - Math.min(...at)) / 1000;
      const tokens = mock.limits!.accepted.reduce((n, a) => n + a.input, 0);
      const tokenUse = tokens / ((LIMIT.inputTokensPerMinute! / 60) * (LIMIT.burstSeconds! + seconds));
      const requestUse = at.length / ((LIMIT.requestsPerMinute! / 60) * (LIMIT.burstSeconds! + seconds));
      console.log(
        `[limits-full] ${at.length} requests, ${tokens} input tokens in ${seconds.toFixed(0)} s: ` +
          `${(tokenUse * 100).toFixed(0)} % of the token limit, ${(requestUse * 100).toFixed(0)} % of the request limit`,
      );
      expect(tokenUse).toBeGreaterThanOrEqual(0.85);
      // the interactive run (priority 2) waited less than the batch tasks (priority 4) did at the median
      console.log(`[limits-full] interactive wait ${interactiveWait} ms, batch median ${median(batchWaits)} ms`);
      expect(interactiveWait).toBeLessThan(median(batchWaits));
      // nothing left behind: no request in flight (no reservation held) or waiting, the killed workers' grants reclaimed
      await limiterDrained(limiter, CLIENT_LEASE_MS + 20_000);
      console.log(`[limits-full] ${mock.limits!.rejected} 429s; the limiter empty at the end`);
    },
    TIMEOUT_MS,
  );
});
