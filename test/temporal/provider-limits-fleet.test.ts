/**
 * Provider limits with sub-agents and a schedule (issue 36 "Tests", second bullet; docs/provider-limits.md): a batch
 * whose tasks each call a sub-agent (a child run with its own model requests), and a Keel schedule that fires a second
 * batch while the first one runs, all on one key of a mock Anthropic API that enforces its limit as the real one does
 * (429 with `retry-after` over it: test/mock-providers/limits.ts). No request meets a 429, every task and every
 * sub-agent completes, the limiter ends with nothing in flight or waiting, and every sub-agent's and scheduled task's
 * request went through the limiter: the mock counts one accepted request per grant the limiter made, and the
 * limiter's history names each of those runs in its asks.
 *
 * Scale: 300 requests/min (the workers' buckets hold 2 s of it, the mock's 5 s: the margin for stalls the guide
 * advises), a batch of 12 delegating tasks (three requests each: the task's two turns and its sub-agent's one) and a
 * scheduled batch of 12 one-turn tasks: 48 requests, more than the workers' bucket holds, so tasks wait in line.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent } from '../../activities/agents/define-agent.js';
import { piAiProvider } from '../../activities/model/pi-ai.js';
import { startBatch } from '../../cli/batch/start.js';
import { limiterWorkflowId, type ProviderLimit } from '../../common/limits/definition.js';
import type { AgentBatchResult } from '../../workflows/batch/definitions.js';
import { inputTokensOf } from '../mock-providers/limits.js';
import type { MockStep } from '../mock-providers/script.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';
import { chainHistories, historyText, startKeel, until, type Keel } from './harness.js';
import { limiterDrained, limiterState } from './limiter-drained.js';

const MODEL = 'anthropic/claude-sonnet-4-5';
const LIMIT: ProviderLimit = { requestsPerMinute: 300, inputTokensPerMinute: 600_000, burstSeconds: 2 };
const MOCK_LIMIT = { ...LIMIT, burstSeconds: 5 };
const TASKS = 12;
const HELPER_PROMPT = 'You help with one topic.';

const helper = defineAgent({
  name: 'helper',
  description: 'Helps with one topic and answers in one line.',
  systemPrompt: HELPER_PROMPT,
  tools: [],
  model: MODEL,
});

/** The mock's answer: a delegating task's first turn calls the helper, its second ends; the helper and the rest answer. */
function respond(body: { system?: unknown; messages?: unknown }): MockStep {
  const usage = { input: inputTokensOf(body), output: 5 };
  const messages = JSON.stringify(body.messages ?? []);
  const delegates = !JSON.stringify(body.system ?? '').includes(HELPER_PROMPT) && messages.includes('delegate');
  if (delegates && !messages.includes('"tool_result"'))
    return {
      reply: { blocks: [{ type: 'toolCall', id: 'toolu_1', name: 'helper', arguments: { task: 'a topic' } }], usage },
    };
  return { reply: { blocks: [{ type: 'text', text: 'done' }], usage } };
}

let running: { keel: Keel; mock: MockProviderServer; schedule?: () => Promise<void> } | undefined;
afterEach(async () => {
  await running?.schedule?.().catch(() => {});
  await running?.keel.stop();
  await running?.mock.close();
  running = undefined;
});

describe('provider limits: sub-agents and a schedule', () => {
  it('a batch of delegating tasks and a scheduled batch fired meanwhile: no 429, all done, all through the limiter', async () => {
    const mock = await startMockProvider('anthropic', { limits: MOCK_LIMIT, respond });
    const keel = await startKeel({
      models: {
        '*': piAiProvider({ baseUrls: { anthropic: mock.url }, apiKeys: { anthropic: 'test-key' }, env: {} }),
      },
      agents: [helper],
      providerLimits: { anthropic: LIMIT },
      workerOptions: { maxConcurrentActivityTaskExecutions: 200 },
    });
    running = { keel, mock };
    const limiter = limiterState(keel.worker.client, keel.taskQueue);

    const batchId = `limits-fleet-${randomUUID()}`;
    const batch = await startBatch(
      keel.client,
      keel.taskQueue,
      Array.from({ length: TASKS }, (_, i) => ({ model: MODEL, prompt: `task ${i}: delegate`, tools: ['helper'] })),
      { concurrency: TASKS, batchId },
    );
    // the schedule fires a second batch while this one runs (its tasks wait for the limits for seconds)
    const scheduleId = `limits-fleet-${randomUUID().slice(0, 8)}`;
    const schedule = await keel.client.schedule({
      scheduleId,
      every: '1s',
      tasks: Array.from({ length: TASKS }, (_, i) => ({ model: MODEL, prompt: `scheduled ${i}: answer done` })),
      batch: { concurrency: TASKS },
    });
    running.schedule = () => schedule.delete();
    const fired = await until(
      async () => (await schedule.describe()).info.recentActions.length > 0,
      30_000,
      'the schedule fired',
    ).then(async () => {
      await schedule.pause('the test needs one scheduled batch');
      return (await schedule.describe()).info.recentActions.map((a) => a.action.workflow.workflowId);
    });
    // the scheduled batch started while the first one still ran
    const closed = async () => (await batch.describe()).closeTime;
    for (const id of fired) {
      const started = (await keel.client.client.workflow.getHandle(id).describe()).startTime;
      await batch.result();
      expect(started.getTime()).toBeLessThan((await closed())!.getTime());
    }

    // every task and every sub-agent done
    expect((await batch.result()) as AgentBatchResult).toMatchObject({ done: TASKS });
    const scheduled: string[] = [];
    for (const id of fired) {
      const result = (await keel.client.client.workflow.getHandle(id).result()) as AgentBatchResult;
      expect(result).toMatchObject({ done: TASKS });
      scheduled.push(...Array.from({ length: TASKS }, (_, i) => `${id}-${i}`));
    }
    const subAgents = Array.from({ length: TASKS }, (_, i) => `${batchId}-${i}-toolu_1`);
    for (const id of subAgents)
      expect((await keel.client.client.workflow.getHandle(id).describe()).status.name).toBe('COMPLETED');

    // zero 429s, and the mock served exactly the requests the limiter granted
    expect(mock.limits!.rejected).toBe(0);
    const requests = TASKS * 3 + fired.length * TASKS;
    expect(mock.limits!.accepted).toHaveLength(requests);
    const helperRequests = mock.requests.filter((r) => JSON.stringify(r.body?.system ?? '').includes(HELPER_PROMPT));
    expect(helperRequests).toHaveLength(TASKS);
    const scheduledRequests = mock.requests.filter((r) => JSON.stringify(r.body?.messages).includes('scheduled '));
    expect(scheduledRequests).toHaveLength(fired.length * TASKS);
    // the limiter empty at the end, having granted every request once
    const last = await limiterDrained(limiter, 10_000);
    expect(last.totals.granted).toBe(requests);
    // the limit bound: requests waited in the limiter's line for room
    console.log(`[limits] ${requests} requests, ${last.totals.waited} of them waited for room`);
    expect(last.totals.waited).toBeGreaterThan(0);
    // each sub-agent's and each scheduled task's request asked the limiter (a request is `<workflowId>/<runId>/…`)
    const asked = (
      await chainHistories(keel.worker.client.workflow.getHandle(limiterWorkflowId(keel.taskQueue, 'anthropic')))
    )
      .map(historyText)
      .join('\n');
    for (const id of [...subAgents, ...scheduled]) expect(asked).toContain(`${id}/`);
  }, 120_000);
});
