/**
 * Budgets (README "Budgets"): a run stops before the model call that a reached limit forbids, with status `stopped`
 * and `Budget exceeded: <tokens|cost|model calls> <used> of <limit>`; a warning event at 80 %; the limits hold across
 * continue-as-new; bad limits are refused naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidAgentInputError } from '../../client/agent-client.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { Usage } from '../../common/messages.js';
import { allEvents, startKeel, strip, type Keel } from './harness.js';

const tick = defineTool({
  name: 'tick',
  description: 'Returns `kb` kilobytes of text.',
  parameters: { type: 'object', properties: { kb: { type: 'integer' } }, required: ['kb'] },
  execute: async (_id, args: { kb: number }) => ({
    content: [{ type: 'text', text: 'tock'.padEnd(args.kb * 1024, '.') }],
  }),
});

const usage = (totalTokens: number, cost: number): Partial<Usage> => ({
  input: totalTokens / 2,
  output: totalTokens / 2,
  totalTokens,
  cost: { input: cost / 2, output: cost / 2, cacheRead: 0, cacheWrite: 0, total: cost },
});

/** A model that never stops: every reply calls `tick`, each costing 400 tokens and $0.004. */
const forever = { rules: [{ toolCalls: [{ name: 'tick', arguments: { kb: 1 } }], usage: usage(400, 0.004) }] };
/** The same, 100 tokens a call, with 8 KB tool results so history passes 64 KiB within a few turns. */
const heavy = { rules: [{ toolCalls: [{ name: 'tick', arguments: { kb: 8 } }], usage: usage(100, 0) }] };

const call = (n: number) => ({
  role: 'assistant',
  content: [{ type: 'toolCall', id: `call_${n}_1`, name: 'tick', arguments: { kb: 1 } }],
  stopReason: 'toolUse',
});
const result = (n: number) => ({
  role: 'toolResult',
  toolCallId: `call_${n}_1`,
  toolName: 'tick',
  content: [{ type: 'text', text: 'tock'.padEnd(1024, '.') }],
  isError: false,
});

describe('budgets', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts: { forever, heavy }, tools: [tick] });
  });
  afterAll(() => keel?.stop());

  it('maxTokens: three calls spend 1200 of 1000 tokens; the fourth is never made', async () => {
    const h = await keel.start({
      model: 'scripted/forever',
      prompt: 'go',
      tools: ['tick'],
      budget: { maxTokens: 1000 },
    });
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(r.error).toBe('Budget exceeded: tokens 1200 of 1000');
    expect(r.usage.totalTokens).toBe(1200);
    expect(r.modelCalls).toBe(3);
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      call(1),
      result(1),
      call(2),
      result(2),
      call(3),
      result(3),
    ]);
    const events = (await allEvents(h))
      .filter((e) => e.type === 'budget_warning' || e.type === 'budget_exceeded')
      .map(({ seq: _s, ...e }) => e);
    expect(events).toEqual([
      { type: 'budget_warning', kind: 'tokens', used: 800, limit: 1000 },
      { type: 'budget_exceeded', kind: 'tokens', error: 'Budget exceeded: tokens 1200 of 1000' },
    ]);
    const state = await h.state();
    expect(state.budget).toEqual([{ kind: 'tokens', used: 1200, limit: 1000 }]);
    expect(state.lastError).toBe('Budget exceeded: tokens 1200 of 1000');
  });

  it('maxCostUsd: stops once $0.012 of $0.01 is spent', async () => {
    const h = await keel.start({
      model: 'scripted/forever',
      prompt: 'go',
      tools: ['tick'],
      budget: { maxCostUsd: 0.01 },
    });
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(r.error).toBe('Budget exceeded: cost 0.012 of 0.01');
    expect(r.turns).toBe(3);
    const warnings = (await allEvents(h)).filter((e) => e.type === 'budget_warning').map(({ seq: _s, ...e }) => e);
    expect(warnings).toEqual([{ type: 'budget_warning', kind: 'cost', used: 0.008, limit: 0.01 }]);
  });

  it('maxModelCalls: exactly two model calls, then stopped', async () => {
    const h = await keel.start({
      model: 'scripted/forever',
      prompt: 'go',
      tools: ['tick'],
      budget: { maxModelCalls: 2, maxTokens: 1_000_000 },
    });
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(r.error).toBe('Budget exceeded: model calls 2 of 2');
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'go' }] },
      call(1),
      result(1),
      call(2),
      result(2),
    ]);
    const history = await h.workflow.fetchHistory();
    const models = history.events!.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'callModel',
    );
    expect(models).toHaveLength(2);
  });

  it('the budget holds across continue-as-new: 20 calls of 100 tokens over several runs of the chain', async () => {
    const h = await keel.start({
      model: 'scripted/heavy',
      prompt: 'go',
      tools: ['tick'],
      continueAsNewAfterBytes: 65536,
      maxTurns: 1000,
      budget: { maxTokens: 2000 },
    });
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(r.error).toBe('Budget exceeded: tokens 2000 of 2000');
    expect(r.usage.totalTokens).toBe(2000);
    expect(r.modelCalls).toBe(20);
    const state = await h.state();
    expect(state.continuedAsNew).toBeGreaterThanOrEqual(2);
    expect(state.messageCount).toBe(41);
  });

  it('bad limits are refused, naming each field', async () => {
    const err = await keel.client
      .start({
        model: 'scripted/forever',
        prompt: 'go',
        budget: { maxTokens: 0, maxCostUsd: -1, maxModelCalls: 1.5, maxDollars: 3 },
      } as never)
      .catch((e) => e);
    expect(err).toBeInstanceOf(InvalidAgentInputError);
    expect((err as InvalidAgentInputError).errors).toEqual([
      'budget.maxDollars: unknown field',
      'budget.maxTokens: must be >= 1',
      'budget.maxCostUsd: must be > 0',
      'budget.maxModelCalls: must be integer',
    ]);
  });
});
