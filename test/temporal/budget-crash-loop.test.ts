/**
 * A budget survives a crash loop: every attempt of a model call streams 300 tokens (reported in its heartbeat), then
 * its worker process is SIGKILLed. Five kills spend 1500 tokens; the sixth attempt is refused without calling the
 * provider and the run ends `stopped` at the budget — Temporal's retries alone would have gone on spending.
 */
import { afterAll, expect, it } from 'vitest';
import { killAllWorkers, killWorker } from './child-worker.js';
import { CHILD_WORKER, crashLoopStart, killWhileStreaming } from './budget-fixtures.js';

afterAll(killAllWorkers);

it('five workers killed mid-stream spend 1500 of 1500 tokens; no sixth provider call, status stopped', async () => {
  const { env, client, worker: first } = await crashLoopStart('crash-loop');
  const h = await client.start({
    model: 'spender/300',
    prompt: 'spend',
    heartbeatTimeout: '2s',
    modelRetry: { initialInterval: '100ms', maximumInterval: '200ms', maximumAttempts: 50 },
    budget: { maxTokens: 1500 },
  });
  // each attempt on a worker streams, and its heartbeat carries the earlier attempts' 300 tokens each
  const worker = await killWhileStreaming(h, first, { fixture: CHILD_WORKER, env, kills: 5, perAttempt: 300 });
  const r = await h.result();
  expect(r.status).toBe('stopped');
  expect(r.error).toBe('Budget exceeded: tokens 1500 of 1500');
  expect(r.usage.totalTokens).toBe(1500);
  expect(r.modelCalls).toBe(1);
  expect(r.newMessages).toHaveLength(1); // the prompt: no assistant message was ever completed
  await killWorker(worker);
  await client.close();
}, 240_000);
