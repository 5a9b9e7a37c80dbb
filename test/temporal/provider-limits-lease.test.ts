/**
 * A worker's lease on its grants (docs/provider-limits.md "Waiting is durable"): a worker's limits client that goes
 * silent for CLIENT_LEASE_MS is dead, and the limiter — woken by its own timer, with no ask coming — frees the slots it
 * held; a live worker's client sends a keep-alive batch while it holds a grant, so a call longer than the lease keeps
 * its slot. Both on a key limited to one concurrent request, the workers in their own processes.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { limitSpec } from '../../common/limits/definition.js';
import { CLIENT_LEASE_MS } from '../../common/limits/ledger.js';
import { inputTokensOf } from '../mock-providers/limits.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import { until } from './harness.js';
import { limiterDrained, limiterState } from './limiter-drained.js';

const WORKER = fileURLToPath(new URL('./fixtures/limits-worker.ts', import.meta.url));
const MODEL = 'anthropic/claude-sonnet-4-5';
/** A reply streamed one character a second: longer than the lease by about 20 s. */
const LONG_TEXT = 'x'.repeat(Math.round(CLIENT_LEASE_MS / 1_000) + 20);

const mocks: MockProviderServer[] = [];
afterAll(async () => {
  killAllWorkers();
  await Promise.all(mocks.map((m) => m.close()));
});

/** A mock API (prompt `hang`: no reply while its caller lives; `long`: LONG_TEXT) and a key limited to one request. */
async function setUp() {
  const mock = await startMockProvider('anthropic', {
    respond: (body) => {
      const prompt = JSON.stringify(body);
      const usage = { input: inputTokensOf(body), output: 5 };
      if (prompt.includes('hang')) return { reply: { blocks: [{ type: 'text', text: 'x' }], usage }, delayMs: 300_000 };
      if (prompt.includes('long'))
        return { reply: { blocks: [{ type: 'text', text: LONG_TEXT }], usage, chunkSize: 1 }, delayMs: 1_000 };
      return { reply: { blocks: [{ type: 'text', text: 'done' }], usage } };
    },
  });
  mocks.push(mock);
  const taskQueue = `limits-lease-${randomUUID()}`;
  const env = {
    KEEL_TASK_QUEUE: taskQueue,
    KEEL_MOCK_URL: mock.url,
    KEEL_PROVIDER_LIMITS: `anthropic:${limitSpec({ concurrentRequests: 1 })}`,
  };
  const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
  const limiter = limiterState(client.client, taskQueue);
  return { mock, env, client, limiter };
}

describe('provider limits: a worker holds its grants by lease', () => {
  it.concurrent(
    'a call in flight on a killed worker whose run then ends frees its slot at the lease, not its deadline',
    async () => {
      const { mock, env, client, limiter } = await setUp();
      const first = await spawnWorker(WORKER, env);
      const hung = await client.start({ model: MODEL, prompt: 'hang' });
      await until(() => mock.requests.length === 1, 30_000, 'the first call reached the API');
      await killWorker(first);
      await client.client.workflow.getHandle(hung.workflowId).terminate('its worker died; nothing retries its call');
      await spawnWorker(WORKER, env); // another worker (its own limits client) answers the limiter's queries
      // the only slot stays taken until the dead client's lease lapses (the attempt's own deadline is its activity's
      // start-to-close timeout plus a minute); no ask comes meanwhile: the limiter's timer reclaims it
      expect((await limiter()).inUse.concurrent).toBe(1);
      await limiterDrained(limiter, CLIENT_LEASE_MS + 15_000);
      const next = await client.start({ model: MODEL, prompt: 'answer done' });
      expect(await next.result()).toMatchObject({ status: 'completed' });
    },
    120_000,
  );

  it.concurrent(
    "a live worker's call longer than the lease keeps its slot: the next run's call waits for it to end",
    async () => {
      const { mock, env, client, limiter } = await setUp();
      await spawnWorker(WORKER, env);
      const long = await client.start({ model: MODEL, prompt: 'long' });
      await until(() => mock.requests.length === 1, 30_000, 'the long call reached the API');
      // a frame a second: past the lease (and the limiter's timer for it) by 10 s, the slot is still the long call's
      const pastLease = Math.round(CLIENT_LEASE_MS / 1_000) + 10;
      await until(() => mock.requests[0]!.framesSent >= pastLease, 90_000, `${pastLease} frames sent`);
      expect((await limiter()).inUse.concurrent).toBe(1);
      const next = await client.start({ model: MODEL, prompt: 'answer done' });
      await until(async () => (await limiter()).waiting.length === 1, 30_000, 'the next call waiting');
      await mock.requests[0]!.closed;
      expect(mock.requests.length).toBe(1); // the next call reached the API only after the long one ended
      expect(await long.result()).toMatchObject({ status: 'completed' });
      expect(await next.result()).toMatchObject({ status: 'completed' });
      expect(mock.requests.length).toBe(2);
    },
    150_000,
  );
});
