/**
 * A batch budget (README "Budgets"): one pool for every task. Once the finished tasks spent it no further task starts
 * (each is recorded `stopped`), and running tasks are signalled to stop before their next model call.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { Usage } from '../../common/messages.js';
import type { AgentRunInput } from '../../common/run.js';
import {
  progressQuery,
  resultsQuery,
  type AgentBatchInput,
  type AgentBatchResult,
} from '../../workflows/batch/definitions.js';
import { gate, startKeel, until, type Keel } from './harness.js';

const tokens = (totalTokens: number): Partial<Usage> => ({ input: totalTokens, totalTokens });
const tick = defineTool({
  name: 'tick',
  description: 'Returns tock.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'tock' }] }),
});
const held = gate();
const hold = defineTool({
  name: 'hold',
  description: 'Waits until the test releases it.',
  parameters: { type: 'object', properties: {} },
  execute: async () => {
    await held.promise;
    return { content: [{ type: 'text', text: 'released' }] };
  },
});

const script = {
  rules: [
    { match: 'toolResult:hold', toolCalls: [{ name: 'hold', arguments: {} }], usage: tokens(100) },
    { match: 'quick', text: 'quick done', usage: tokens(1000) },
    { match: 'slow', toolCalls: [{ name: 'hold', arguments: {} }], usage: tokens(100) },
    { toolCalls: [{ name: 'tick', arguments: {} }], usage: tokens(400) },
  ],
};

describe('batch budget', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts: { spend: script }, tools: [tick, hold] });
  });
  afterAll(async () => {
    held.open();
    await keel?.stop();
  });

  const startBatch = (input: AgentBatchInput) =>
    keel.client.client.workflow.start('agentBatchWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: `budget-batch-${randomUUID()}`,
      args: [input],
    });

  it('the first task spends the pool; the other four never start and are recorded stopped', async () => {
    const tasks: AgentRunInput[] = Array.from({ length: 5 }, (_, i) => ({
      model: 'scripted/spend',
      prompt: `task ${i}`,
      tools: ['tick'],
    }));
    const handle = await startBatch({ tasks, concurrency: 1, budget: { maxTokens: 2000 } });
    const r = (await handle.result()) as AgentBatchResult;
    expect(r).toMatchObject({ total: 5, done: 5, failed: 0, byStatus: { stopped: 5 }, tokens: 2000 });
    const { results } = await handle.query(resultsQuery, {});
    expect(results.map((t) => [t.status, t.tokens, t.error])).toEqual([
      ['stopped', 2000, 'Budget exceeded: tokens 2000 of 2000'],
      ...Array.from({ length: 4 }, () => ['stopped', 0, 'Budget exceeded: tokens 2000 of 2000 (batch budget)']),
    ]);
    const progress = await handle.query(progressQuery);
    expect(progress.budget).toEqual({ lines: [{ kind: 'tokens', used: 2000, limit: 2000 }], spent: true });
    const child = await keel.client.client.workflow.getHandle(`${handle.workflowId}-0`).describe();
    expect(child.status.name).toBe('COMPLETED');
    await expect(keel.client.client.workflow.getHandle(`${handle.workflowId}-1`).describe()).rejects.toThrow(
      /not found/i,
    );
  });

  it('a running task is asked to stop once a finished one spent the pool', async () => {
    const tasks: AgentRunInput[] = [
      { model: 'scripted/spend', prompt: 'slow', tools: ['hold'] },
      { model: 'scripted/spend', prompt: 'quick' },
    ];
    const handle = await startBatch({ tasks, concurrency: 2, budget: { maxTokens: 1000 } });
    const slow = keel.client.client.workflow.getHandle(`${handle.workflowId}-0`);
    // the quick task spent 1000 of 1000; the slow one, holding in its tool, has received the stop signal
    await until(
      async () => {
        const history = await slow.fetchHistory();
        return history.events!.some((e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'budgetStop');
      },
      30_000,
      'budgetStop signalled',
    );
    held.open();
    const r = (await handle.result()) as AgentBatchResult;
    expect(r).toMatchObject({ total: 2, done: 2, byStatus: { completed: 1, stopped: 1 }, tokens: 1100 });
    const { results } = await handle.query(resultsQuery, {});
    expect(results.map((t) => [t.status, t.tokens, t.error])).toEqual([
      ['stopped', 100, 'Budget exceeded: tokens 1000 of 1000 (batch budget)'],
      ['completed', 1000, undefined],
    ]);
    const progress = await handle.query(progressQuery);
    expect(progress.budget).toEqual({ lines: [{ kind: 'tokens', used: 1100, limit: 1000 }], spent: true });
  });
});
