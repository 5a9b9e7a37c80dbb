/** docs/architecture.md#visibility: what an operator sees in the Temporal UI: summaries, details, search attributes. */
import { temporal } from '@temporalio/proto';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { KEEL_COST_USD, KEEL_MODEL, KEEL_STATUS, KEEL_TURNS } from '../../common/search-attributes.js';
import { TURN_UPSERT_STRIDE } from '../../workflows/agent/visibility.js';
import { startKeel, until, workflowTaskFailures, type Keel } from './harness.js';

const echo = defineTool({
  name: 'echo',
  description: 'Echoes value.',
  parameters: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
  execute: async (_id, args: { value: string }) => ({ content: [{ type: 'text', text: `echoed: ${args.value}` }] }),
});
const scripts = {
  vis: {
    rules: [
      {
        match: 'toolResult:echo',
        text: 'all echoed',
        usage: { totalTokens: 30, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.25 } },
      },
      {
        match: 'two',
        toolCalls: [
          { id: 'tool-1', name: 'echo', arguments: { value: 'a' } },
          { id: 'tool-2', name: 'echo', arguments: { value: 'b' } },
        ],
        usage: { totalTokens: 20, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.5 } },
      },
      { text: 'hello' },
    ],
  },
  loop: { rules: [{ toolCalls: [{ id: 'tool-1', name: 'echo', arguments: { value: 'again' } }] }] },
};

describe('Temporal UI visibility', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [echo] });
  });
  afterAll(() => keel?.stop());

  it('static summary and details at start, current details, a summary on every activity', async () => {
    const h = await keel.start({
      model: 'scripted/vis',
      prompt: 'echo two things\nsecond line',
      tools: ['echo'],
      metadata: { ticket: 42 },
    });
    await h.result();
    const d = await h.workflow.describe();
    expect(await d.staticSummary()).toBe('echo two things');
    expect(await d.staticDetails()).toBe('model: scripted/vis\n\ntools: echo\n\nmode: task\n\nmetadata: {"ticket":42}');
    // current details: what the UI reads through the built-in metadata query
    const current = (await h.workflow.query<{ currentDetails: string }>('__temporal_workflow_metadata')).currentDetails;
    expect(current).toBe('**completed** · turn 2 · 5 messages\n\nusage: 50 tokens · $0.7500\n\nlast reply: all echoed');
    const history = await h.workflow.fetchHistory();
    const scheduled = history.events!.filter(
      (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    );
    const summaries = scheduled.map((e) =>
      e.userMetadata?.summary ? defaultPayloadConverter.fromPayload<string>(e.userMetadata.summary) : undefined,
    );
    expect(summaries).toEqual([
      'check run input',
      'model scripted/vis · turn 1',
      'prepare 2 tool calls',
      'echo a',
      'echo b',
      'model scripted/vis · turn 2',
    ]);
  });

  it('search attributes are kept current: KeelStatus finds completed runs and waiting sessions', async () => {
    const done = await keel.start({ model: 'scripted/vis', prompt: 'echo two things', tools: ['echo'] });
    await done.result();
    const waiting = await keel.start({ model: 'scripted/vis', prompt: 'hi', mode: 'session' });
    await until(async () => (await waiting.state()).status === 'waiting', 20_000, 'waiting');
    const find = async (query: string) => {
      const ids: string[] = [];
      for await (const w of keel.client.client.workflow.list({ query })) ids.push(w.workflowId);
      return ids;
    };
    await until(
      async () => (await find(`KeelStatus="completed" AND WorkflowId="${done.workflowId}"`)).length === 1,
      20_000,
      'completed visible',
    );
    await until(
      async () => (await find(`KeelStatus="waiting" AND WorkflowId="${waiting.workflowId}"`)).length === 1,
      20_000,
      'waiting visible',
    );
    const attrs = (await done.workflow.describe()).typedSearchAttributes;
    expect(attrs.get(KEEL_STATUS)).toBe('completed');
    expect(attrs.get(KEEL_MODEL)).toBe('scripted/vis');
    expect(attrs.get(KEEL_TURNS)).toBe(2);
    expect(attrs.get(KEEL_COST_USD)).toBe(0.75);
    await waiting.end();
    await waiting.result();
  });

  it(`a turn end upserts KeelTurns and KeelCostUsd every ${TURN_UPSERT_STRIDE} turns; status changes and the end upsert at once`, async () => {
    const h = await keel.start({ model: 'scripted/loop', prompt: 'go', tools: ['echo'], maxTurns: 25 });
    expect((await h.result()).status).toBe('stopped');
    const upserts = (await h.workflow.fetchHistory()).events!.filter(
      (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
    );
    // (patched() itself upserts TemporalChangeVersion once: not one of Keel's)
    const values = upserts
      .map((e) => e.upsertWorkflowSearchAttributesEventAttributes!.searchAttributes!.indexedFields!)
      .filter((fields) => KEEL_STATUS.name in fields)
      .map((fields) => [KEEL_STATUS, KEEL_TURNS].map((k) => defaultPayloadConverter.fromPayload(fields[k.name]!)));
    // before 0.3.0: one upsert per turn (27 here); before 0.4.0 also ['running', 0] at the first step
    expect(values).toEqual([
      ['running', 10],
      ['running', 20],
      ['stopped', 25],
    ]);
    expect((await h.workflow.describe()).typedSearchAttributes.get(KEEL_TURNS)).toBe(25);
  });
});

describe('search attributes set at start', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [echo] });
  });
  afterAll(() => keel?.stop());
  const keelUpserts = async (workflowId: string) =>
    (await keel.client.client.workflow.getHandle(workflowId).fetchHistory())
      .events!.filter(
        (e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES,
      )
      .map((e) => e.upsertWorkflowSearchAttributesEventAttributes!.searchAttributes!.indexedFields!)
      .filter((fields) => KEEL_STATUS.name in fields)
      .map((fields) => defaultPayloadConverter.fromPayload(fields[KEEL_STATUS.name]!));

  it('AgentClient starts a run with its four attributes: the first step upserts nothing, the end upserts once', async () => {
    const h = await keel.start({ model: 'scripted/vis', prompt: 'hi' });
    expect((await h.result()).finalText).toBe('hello');
    const started = (await h.workflow.fetchHistory()).events![0].workflowExecutionStartedEventAttributes!;
    const fields = started.searchAttributes!.indexedFields!;
    expect(
      [KEEL_STATUS, KEEL_MODEL, KEEL_TURNS, KEEL_COST_USD].map((k) =>
        defaultPayloadConverter.fromPayload(fields[k.name]!),
      ),
    ).toEqual(['running', 'scripted/vis', 0, 0]);
    expect(await keelUpserts(h.workflowId)).toEqual(['completed']);
  });

  it('a run started without them (a raw start, any language) upserts them at its first step', async () => {
    const workflowId = `raw-${crypto.randomUUID()}`;
    const raw = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.client.taskQueue,
      workflowId,
      args: [{ model: 'scripted/vis', prompt: 'hi' }],
    });
    await raw.result();
    expect(await keelUpserts(workflowId)).toEqual(['running', 'completed']);
  });

  it('a run the worker refuses at its input check ends with KeelStatus failed, not the running it started with', async () => {
    const h = await keel.start({ model: 'scripted/vis', prompt: 'hi', tools: ['no-such-tool'] });
    await expect(h.result()).rejects.toThrow();
    expect((await h.workflow.describe()).typedSearchAttributes.get(KEEL_STATUS)).toBe('failed');
    expect(await keelUpserts(h.workflowId)).toEqual(['failed']);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});
