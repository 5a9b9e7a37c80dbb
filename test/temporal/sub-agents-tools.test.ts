/**
 * Issue 33 item 13 — a run's `tools` bound its sub-agents (README "Sub-agents"): every run of a tree is offered only
 * tools its root run lists, unless the sub-agent's definition sets `ownTools` (announced when the worker starts). A
 * run given only `helper`, whose definition lists `secret`: the child is not offered `secret` (its model request's
 * tool list is empty) and its call of it gets the not-enabled result; `secret` never runs.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { defineAgent } from '../../activities/agents/define-agent.js';
import type { ModelProvider, ModelRequest } from '../../activities/model/provider.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { startKeel, strip, type Keel } from './harness.js';
import { call, reply, result, toolUse, user } from './loop-fixtures.js';

const secretRuns: string[] = [];
const secret = defineTool({
  name: 'secret',
  description: 'Reads the secret.',
  parameters: { type: 'object', properties: {} },
  execute: async (_id, _args, _signal, _onUpdate, ctx) => {
    secretRuns.push(ctx.workflowId);
    return { content: [{ type: 'text', text: 's3cr3t' }] };
  },
});
const helper = defineAgent({
  name: 'helper',
  description: 'Helps.',
  systemPrompt: 'You help.',
  tools: ['secret'],
  model: 'scripted/helper',
});
const opener = defineAgent({
  name: 'opener',
  description: 'Helps, with tools of its own.',
  systemPrompt: 'You help.',
  tools: ['secret'],
  ownTools: true,
  model: 'scripted/helper',
});
const scripts = {
  lead: {
    rules: [
      { match: 'toolResult:', text: 'lead done' },
      { match: 'open', toolCalls: [call('o1', 'opener', { task: 'read it' })] },
      { toolCalls: [call('h1', 'helper', { task: 'read it' })] },
    ],
  },
  helper: {
    rules: [{ match: 'toolResult:secret', text: 'helper done' }, { toolCalls: [call('s1', 'secret', {})] }],
  },
};

describe('sub-agents: a run’s tools bound its tree', () => {
  const requests: ModelRequest[] = [];
  const inner = scriptedModel(scripts);
  const recording: ModelProvider = {
    checkModel: inner.checkModel,
    stream(request, signal, onPartial) {
      requests.push(structuredClone(request));
      return inner.stream(request, signal, onPartial);
    },
  };
  let keel: Keel;
  let announced = '';
  beforeAll(async () => {
    const write = vi.spyOn(process.stderr, 'write');
    try {
      keel = await startKeel({ models: { scripted: recording }, tools: [secret], agents: [helper, opener] });
      announced = write.mock.calls.map((c) => String(c[0])).join('');
    } finally {
      write.mockRestore();
    }
  });
  afterAll(() => keel?.stop());

  /** The tool names the sub-agents' model requests (system prompt `You help.`) since request `from` were offered, in order. */
  const childOffers = (from: number) =>
    requests.slice(from).flatMap((q) => (q.systemPrompt === 'You help.' ? [q.tools.map((t) => t.name)] : []));

  it('a run given only helper: helper is not offered secret, its call of secret is refused, secret never runs', async () => {
    const from = requests.length;
    const h = await keel.start({ model: 'scripted/lead', prompt: 'help me', tools: ['helper'] });
    const r = await h.result();
    expect([r.status, r.finalText]).toEqual(['completed', 'lead done']);
    const childId = `${h.workflowId}-h1`;
    expect(childOffers(from)).toEqual([[], []]);
    expect(strip(await keel.client.getHandle(childId).allMessages())).toEqual([
      user('read it'),
      toolUse([call('s1', 'secret', {})]),
      result(
        's1',
        'secret',
        'secret is registered on this worker but not enabled for this run: add --tools secret',
        {},
        true,
      ),
      reply('helper done'),
    ]);
    expect(secretRuns).toEqual([]);
    expect((await keel.client.getHandle(childId).workflow.describe()).memo?.keelTree).toEqual({
      rootWorkflowId: h.workflowId,
      parentWorkflowId: h.workflowId,
      toolCallId: 'h1',
      depth: 1,
      path: ['helper › h1'],
      tools: ['helper'],
      rootBudgeted: false,
      leanStart: true,
    });
  });

  it('a run that lists secret too: helper is offered it and runs it', async () => {
    const from = requests.length;
    const h = await keel.start({ model: 'scripted/lead', prompt: 'help me', tools: ['helper', 'secret'] });
    expect((await h.result()).finalText).toBe('lead done');
    const childId = `${h.workflowId}-h1`;
    expect(childOffers(from)).toEqual([['secret'], ['secret']]);
    expect(strip(await keel.client.getHandle(childId).allMessages())[2]).toEqual(
      result('s1', 'secret', 's3cr3t', undefined),
    );
    expect(secretRuns.splice(0)).toEqual([childId]);
  });

  it('a definition with ownTools is offered its tools whatever the run lists; the worker announced it at start', async () => {
    expect(announced).toContain(
      '[keel] WARNING: sub-agent "opener" is offered all its tools whatever its tree\'s root run was given (ownTools): secret\n',
    );
    const from = requests.length;
    const h = await keel.start({ model: 'scripted/lead', prompt: 'open it', tools: ['opener'] });
    expect((await h.result()).finalText).toBe('lead done');
    const childId = `${h.workflowId}-o1`;
    expect(childOffers(from)).toEqual([['secret'], ['secret']]);
    expect(secretRuns.splice(0)).toEqual([childId]);
    // its own sub-agents may use them too: the bound it passes on is widened by them
    expect((await keel.client.getHandle(childId).workflow.describe()).memo?.keelTree).toMatchObject({
      tools: ['opener', 'secret'],
    });
  });
});
