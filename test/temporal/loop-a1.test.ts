/**
 * Conformance with the cases of Pi's own agent-loop test suite, mapped onto Keel (docs/architecture.md#the-loop):
 * transformContext is the worker hook, shouldStopAfterTurn is `maxTurns`, agentLoopContinue is a run started with
 * `messages` and no `prompt`. Whole transcripts, exact texts and exact event order are asserted.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Script } from '../../activities/model/scripted.js';
import { defineTool, type ToolContext } from '../../activities/tools/define-tool.js';
import type { LoggedEvent } from '../../common/events.js';
import type { Message } from '../../common/messages.js';
import type { AgentRunInput } from '../../common/run.js';
import { call, echo, keelWith, note, reply, result, teeOf, toolUse, user, type Log } from './loop-fixtures.js';
import {
  allEvents,
  gate,
  hookRouter,
  notation,
  strip,
  until,
  workflowTaskFailures,
  type Keel,
  type RecordingModel,
} from './harness.js';

// ---------------------------------------------------------------------------------------------------------------------
// Fixtures

/** A prior assistant message, as a transcript from Pi would hold it. */
const priorReply = (text: string): Message => ({
  role: 'assistant',
  content: [{ type: 'text', text }],
  api: 'scripted',
  provider: 'scripted',
  model: 'prior',
  usage: {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  },
  stopReason: 'stop',
  timestamp: 1,
});
const priorUser = (text: string): Message => ({ role: 'user', content: [{ type: 'text', text }], timestamp: 1 });

const wid = () => `loop-a1-${randomUUID()}`;
const roles = (messages: Message[]) => messages.map((m) => m.role);
const turnEnds = (events: LoggedEvent[]) => events.filter((e) => e.type === 'turn_end');

// ---------------------------------------------------------------------------------------------------------------------

describe('A.1-1 emits the standard lifecycle', () => {
  let keel: Keel;
  beforeAll(async () => {
    ({ keel } = await keelWith({ scripts: { lifecycle: { rules: [{ text: 'Hi there!' }] } } }));
  });
  afterAll(() => keel?.stop());

  it('AS, TS, MS(u), ME(u), MS(a1), ME(a1), TE(a1,[]), AE; agent_end carries [user, assistant]', async () => {
    const h = await keel.start({ model: 'scripted/lifecycle', prompt: 'Hello' });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(r.finalText).toBe('Hi there!');
    expect(strip(r.newMessages)).toEqual([user('Hello'), reply('Hi there!')]);
    const events = await allEvents(h);
    expect(notation(events)).toEqual(['AS', 'TS', 'MS(u:Hello)', 'ME(u:Hello)', 'MS(a)', 'ME(a)', 'TE()', 'AE']);
    const end = events[events.length - 1];
    expect(end.type === 'agent_end' && strip(end.messages)).toEqual([user('Hello'), reply('Hi there!')]);
  });
});

describe('A.1-2 final-answer stream events are forwarded as updates', () => {
  it.skip('does not apply to Keel: variant 04780bf only (MAIN ignores final_answer_* events), and message_update is a heartbeat in Keel, not an event', () => {});
});

describe('A.1-3 / A.1-4 transformContext (worker hook) shapes each model request', () => {
  let keel: Keel;
  let model: RecordingModel;
  const router = hookRouter();
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        filtered: { rules: [{ text: 'Response' }] },
        window: { rules: [{ text: 'Windowed' }] },
      },
      hooks: router.hooks,
    }));
  });
  afterAll(() => keel?.stop());

  it('A.1-3: a message dropped by transformContext stays in the transcript but never reaches the provider', async () => {
    const id = wid();
    const seen: Message[][] = [];
    router.route(id, {
      transformContext: (messages) => {
        seen.push(structuredClone(messages));
        return messages.filter((m) => !(m.role === 'user' && JSON.stringify(m.content).includes('notification:')));
      },
    });
    const h = await keel.start(
      { model: 'scripted/filtered', prompt: 'Hello', messages: [priorUser('notification: build finished')] },
      id,
    );
    const r = await h.result();
    expect(r.status).toBe('completed');
    // The hook saw the whole context (prior message + prompt); the provider saw only the prompt.
    expect(seen.map((list) => roles(list))).toEqual([['user', 'user']]);
    const requests = model.requests('filtered');
    expect(requests).toHaveLength(1);
    expect(strip(requests[0].messages)).toEqual([user('Hello')]);
    // The dropped message is still part of the session's transcript; this run's new messages are the prompt and reply.
    expect(strip(await h.allMessages())).toEqual([
      user('notification: build finished'),
      user('Hello'),
      reply('Response'),
    ]);
    expect(strip(r.newMessages)).toEqual([user('Hello'), reply('Response')]);
  });

  it('A.1-4: transformContext receives all 5 messages and the provider receives its 2, once per request', async () => {
    const id = wid();
    const seen: Message[][] = [];
    router.route(id, {
      transformContext: (messages) => {
        seen.push(structuredClone(messages));
        return messages.slice(-2);
      },
    });
    const prior = [priorUser('old 1'), priorReply('old reply 1'), priorUser('old 2'), priorReply('old reply 2')];
    const h = await keel.start({ model: 'scripted/window', prompt: 'new message', messages: prior }, id);
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(seen).toHaveLength(1);
    expect(strip(seen[0])).toEqual([
      user('old 1'),
      reply('old reply 1'),
      user('old 2'),
      reply('old reply 2'),
      user('new message'),
    ]);
    const requests = model.requests('window');
    expect(requests).toHaveLength(1);
    expect(strip(requests[0].messages)).toEqual([reply('old reply 2'), user('new message')]);
    expect(strip(r.newMessages)).toEqual([user('new message'), reply('Windowed')]);
  });

  it.skip('A.1-3 (custom roles): out of scope — Keel transcripts hold only user/assistant/toolResult (docs/architecture.md#run-input-and-result), so there is no custom role or convertToLlm; the filtering is covered above through transformContext', () => {});
});

describe('A.1-5 tool call and result', () => {
  let keel: Keel;
  let model: RecordingModel;
  const log: Log = new Map();
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        toolcall: { replies: [{ toolCalls: [call('tool-1', 'echo', { value: 'hello' })] }, { text: 'done' }] },
      },
      tools: [echo(log)],
    }));
  });
  afterAll(() => keel?.stop());

  it('executes echo once; tr1 "echoed: hello"; the loop asks the model again', async () => {
    const h = await keel.start({ model: 'scripted/toolcall', prompt: 'echo something', tools: ['echo'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(log.get(h.workflowId)).toEqual(['hello']);
    expect(model.requests('toolcall')).toHaveLength(2);
    expect(strip(r.newMessages)).toEqual([
      user('echo something'),
      toolUse([call('tool-1', 'echo', { value: 'hello' })]),
      result('tool-1', 'echo', 'echoed: hello', { value: 'hello' }),
      reply('done'),
    ]);
    const events = await allEvents(h);
    expect(notation(events)).toEqual([
      'AS',
      'TS',
      'MS(u:echo something)',
      'ME(u:echo something)',
      'MS(a)',
      'ME(a)',
      'TES(tool-1)',
      'TEE(tool-1)',
      'MS(tr:tool-1)',
      'ME(tr:tool-1)',
      'TE(tool-1)',
      'TS',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    expect(teeOf(events)).toEqual([
      {
        id: 'tool-1',
        isError: false,
        result: { content: [{ type: 'text', text: 'echoed: hello' }], details: { value: 'hello' } },
      },
    ]);
    const tes = events.find((e) => e.type === 'tool_execution_start');
    expect(tes).toMatchObject({ toolCallId: 'tool-1', toolName: 'echo', args: { value: 'hello' } });
  });
});

describe('A.1-6 a length-truncated message is not executed', () => {
  let keel: Keel;
  let model: RecordingModel;
  const log: Log = new Map();
  const router = hookRouter();
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        truncated: {
          replies: [{ toolCalls: [call('tool-1', 'echo', { value: 'hel' })], stopReason: 'length' }, { text: 'done' }],
        },
      },
      tools: [echo(log)],
      hooks: router.hooks,
    }));
  });
  afterAll(() => keel?.stop());

  it('fails the call with the output-token-limit text, runs no hook, and calls the model again', async () => {
    const id = wid();
    const hookCalls: string[] = [];
    router.route(id, {
      beforeToolCall: () => void hookCalls.push('before'),
      afterToolCall: () => void hookCalls.push('after'),
    });
    const h = await keel.start({ model: 'scripted/truncated', prompt: 'echo hello', tools: ['echo'] }, id);
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(log.get(id)).toBeUndefined();
    expect(hookCalls).toEqual([]);
    expect(model.requests('truncated')).toHaveLength(2);
    const text =
      'Tool call "echo" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.';
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      toolUse([call('tool-1', 'echo', { value: 'hel' })], 'length'),
      result('tool-1', 'echo', text, {}, true),
      reply('done'),
    ]);
    const events = await allEvents(h);
    expect(notation(events)).toEqual([
      'AS',
      'TS',
      'MS(u:echo hello)',
      'ME(u:echo hello)',
      'MS(a)',
      'ME(a)',
      'TES(tool-1)',
      'TEE(tool-1)',
      'MS(tr:tool-1)',
      'ME(tr:tool-1)',
      'TE(tool-1)',
      'TS',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    expect(teeOf(events)).toEqual([
      { id: 'tool-1', isError: true, result: { content: [{ type: 'text', text }], details: {} } },
    ]);
  });
});

describe('A.1-7 / A.1-8 argument shaping before execute', () => {
  let keel: Keel;
  const log: Log = new Map();
  const router = hookRouter();
  const editParameters = {
    type: 'object',
    properties: {
      edits: {
        type: 'array',
        items: {
          type: 'object',
          properties: { oldText: { type: 'string' }, newText: { type: 'string' } },
          required: ['oldText', 'newText'],
        },
      },
    },
    required: ['edits'],
  };
  const edit = defineTool<{ edits: { oldText: string; newText: string }[] }>({
    name: 'edit',
    description: 'Applies edits.',
    parameters: editParameters,
    // Pi's compatibility shim: fold a top-level oldText/newText pair into `edits` (appended to any existing edits).
    prepareArguments(raw) {
      const a = raw as { oldText?: string; newText?: string; edits?: unknown[] };
      if (typeof a.oldText !== 'string' || typeof a.newText !== 'string') return raw;
      const { oldText, newText, ...rest } = a;
      return { ...rest, edits: [...(a.edits ?? []), { oldText, newText }] };
    },
    execute: async (_id, args, _signal, _onUpdate, ctx) => {
      note(log, ctx, args.edits);
      return {
        content: [{ type: 'text', text: `applied ${args.edits.length} edit(s)` }],
        details: { edits: args.edits },
      };
    },
  });
  beforeAll(async () => {
    ({ keel } = await keelWith({
      scripts: {
        mutate: { replies: [{ toolCalls: [call('tool-1', 'echo', { value: 'hello' })] }, { text: 'done' }] },
        shim: {
          replies: [{ toolCalls: [call('tool-1', 'edit', { oldText: 'before', newText: 'after' })] }, { text: 'done' }],
        },
      },
      tools: [echo(log), edit],
      hooks: router.hooks,
    }));
  });
  afterAll(() => keel?.stop());

  it('A.1-7: beforeToolCall may mutate args; execute receives them without re-validation', async () => {
    const id = wid();
    router.route(id, {
      beforeToolCall: (ctx) => {
        (ctx.args as { value: unknown }).value = 123;
      },
    });
    const h = await keel.start({ model: 'scripted/mutate', prompt: 'echo hello', tools: ['echo'] }, id);
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(log.get(id)).toEqual([123]);
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      toolUse([call('tool-1', 'echo', { value: 'hello' })]),
      result('tool-1', 'echo', 'echoed: 123', { value: 123 }),
      reply('done'),
    ]);
  });

  it('A.1-8: prepareArguments runs before validation; execute receives the folded edits', async () => {
    const h = await keel.start({ model: 'scripted/shim', prompt: 'edit it', tools: ['edit'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(log.get(h.workflowId)).toEqual([[{ oldText: 'before', newText: 'after' }]]);
    expect(strip(r.newMessages)).toEqual([
      user('edit it'),
      toolUse([call('tool-1', 'edit', { oldText: 'before', newText: 'after' })]),
      result('tool-1', 'edit', 'applied 1 edit(s)', { edits: [{ oldText: 'before', newText: 'after' }] }),
      reply('done'),
    ]);
    // tool_execution_start carries the raw arguments.
    const tes = (await allEvents(h)).find((e) => e.type === 'tool_execution_start');
    expect(tes).toMatchObject({ toolCallId: 'tool-1', args: { oldText: 'before', newText: 'after' } });
  });
});

/**
 * Two echo-like calls, tool-1 "first" blocked on a gate and tool-2 "second" immediate. The test opens the gate only
 * once the workflow has recorded tool-2's tool_execution_end, so tool-2 finishing first is observed, not timed.
 */
describe('A.1-9 / A.1-13 parallel: TEE in completion order, results in source order', () => {
  let keel: Keel;
  const log: Log = new Map();
  const firstFinished = new Set<string>();
  /** Pi's `parallelObserved`: tool-2 started before tool-1 finished. */
  const overlap = new Map<string, boolean>();
  let release = gate();
  const blockFirst = async (value: unknown, ctx: ToolContext) => {
    if (value === 'first') {
      await release.promise;
      firstFinished.add(ctx.workflowId);
    } else overlap.set(ctx.workflowId, !firstFinished.has(ctx.workflowId));
  };
  const twoCalls = (name: string): Script => ({
    replies: [
      { toolCalls: [call('tool-1', name, { value: 'first' }), call('tool-2', name, { value: 'second' })] },
      { text: 'done' },
    ],
  });
  beforeAll(async () => {
    ({ keel } = await keelWith({
      scripts: { parallel: twoCalls('echo'), 'all-parallel': twoCalls('par') },
      tools: [
        echo(log, { before: blockFirst }),
        echo(log, { name: 'par', executionMode: 'parallel', before: blockFirst }),
      ],
    }));
  });
  afterAll(() => keel?.stop());

  async function runGated(input: AgentRunInput) {
    release = gate();
    const h = await keel.start(input);
    await until(async () => notation(await allEvents(h)).includes('TEE(tool-2)'), 20_000, 'tool-2 to finish');
    release.open();
    return { h, r: await h.result() };
  }

  const toolPhase = [
    'TES(tool-1)',
    'TES(tool-2)',
    'TEE(tool-2)',
    'TEE(tool-1)',
    'MS(tr:tool-1)',
    'ME(tr:tool-1)',
    'MS(tr:tool-2)',
    'ME(tr:tool-2)',
    'TE(tool-1,tool-2)',
  ];

  it('A.1-9: toolExecution "parallel" overlaps executions; TEE ids [tool-2, tool-1]; results [tool-1, tool-2]', async () => {
    const { h, r } = await runGated({
      model: 'scripted/parallel',
      prompt: 'two echoes',
      tools: ['echo'],
      toolExecution: 'parallel',
    });
    expect(r.status).toBe('completed');
    expect(overlap.get(h.workflowId)).toBe(true);
    // Both ran; which activity a worker picks up first is not an observable order (both TES precede any execution).
    expect([...(log.get(h.workflowId) ?? [])].sort()).toEqual(['first', 'second']);
    expect(strip(r.newMessages)).toEqual([
      user('two echoes'),
      toolUse([call('tool-1', 'echo', { value: 'first' }), call('tool-2', 'echo', { value: 'second' })]),
      result('tool-1', 'echo', 'echoed: first', { value: 'first' }),
      result('tool-2', 'echo', 'echoed: second', { value: 'second' }),
      reply('done'),
    ]);
    const events = await allEvents(h);
    expect(notation(events)).toEqual([
      'AS',
      'TS',
      'MS(u:two echoes)',
      'ME(u:two echoes)',
      'MS(a)',
      'ME(a)',
      ...toolPhase,
      'TS',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    const te = turnEnds(events)[0];
    expect(te.type === 'turn_end' && te.toolResults.map((t) => t.toolCallId)).toEqual(['tool-1', 'tool-2']);
  });

  it('A.1-13: every tool marked executionMode "parallel" (config default) → parallel', async () => {
    const { h, r } = await runGated({ model: 'scripted/all-parallel', prompt: 'two pars', tools: ['par'] });
    expect(r.status).toBe('completed');
    expect(overlap.get(h.workflowId)).toBe(true);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:two pars)',
      'ME(u:two pars)',
      'MS(a)',
      'ME(a)',
      ...toolPhase,
      'TS',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    expect(strip(r.newMessages).slice(2, 4)).toEqual([
      result('tool-1', 'par', 'echoed: first', { value: 'first' }),
      result('tool-2', 'par', 'echoed: second', { value: 'second' }),
    ]);
  });
});

describe('A.1-10 steering is injected only after the whole tool batch', () => {
  let keel: Keel;
  let model: RecordingModel;
  const log: Log = new Map();
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        steered: {
          replies: [
            { toolCalls: [call('tool-1', 'echo', { value: 'first' }), call('tool-2', 'echo', { value: 'second' })] },
            { text: 'done' },
          ],
        },
      },
      // Once the first tool has run, a steering message arrives (once).
      tools: [
        echo(log, {
          before: async (value, ctx) =>
            void (value === 'first' && (await keel.client.getHandle(ctx.workflowId).steer('interrupt'))),
        }),
      ],
    }));
  });
  afterAll(() => keel?.stop());

  it('runs both sequential calls, then injects "interrupt" before the next model call', async () => {
    const h = await keel.start({
      model: 'scripted/steered',
      prompt: 'start',
      tools: ['echo'],
      toolExecution: 'sequential',
    });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(log.get(h.workflowId)).toEqual(['first', 'second']);
    expect(strip(r.newMessages)).toEqual([
      user('start'),
      toolUse([call('tool-1', 'echo', { value: 'first' }), call('tool-2', 'echo', { value: 'second' })]),
      result('tool-1', 'echo', 'echoed: first', { value: 'first' }),
      result('tool-2', 'echo', 'echoed: second', { value: 'second' }),
      user('interrupt'),
      reply('done'),
    ]);
    const events = await allEvents(h);
    expect(notation(events)).toEqual([
      'AS',
      'TS',
      'MS(u:start)',
      'ME(u:start)',
      'MS(a)',
      'ME(a)',
      'TES(tool-1)',
      'TEE(tool-1)',
      'MS(tr:tool-1)',
      'ME(tr:tool-1)',
      'TES(tool-2)',
      'TEE(tool-2)',
      'MS(tr:tool-2)',
      'ME(tr:tool-2)',
      'TE(tool-1,tool-2)',
      'TS',
      'MS(u:interrupt)',
      'ME(u:interrupt)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    expect(teeOf(events).map((t) => t.isError)).toEqual([false, false]);
    const requests = model.requests('steered');
    expect(requests).toHaveLength(2);
    expect(strip(requests[1].messages).at(-1)).toEqual(user('interrupt'));
  });
});

/**
 * Sequential batches: the first call blocks on a gate; while it is blocked the test checks that the second call has
 * neither started executing nor got its tool_execution_start (in a parallel batch both TES precede any execution).
 */
describe('A.1-11 / A.1-12 executionMode "sequential" makes the batch sequential', () => {
  let keel: Keel;
  const log: Log = new Map();
  let release = gate();
  const blockFirst = async (value: unknown) => {
    if (value === 'first' || value === 'a') await release.promise;
  };
  beforeAll(async () => {
    ({ keel } = await keelWith({
      scripts: {
        'per-tool': {
          replies: [
            { toolCalls: [call('tool-1', 'slow', { value: 'first' }), call('tool-2', 'slow', { value: 'second' })] },
            { text: 'done' },
          ],
        },
        mixed: {
          replies: [
            { toolCalls: [call('tool-1', 'slow', { value: 'a' }), call('tool-2', 'fast', { value: 'b' })] },
            { text: 'done' },
          ],
        },
      },
      tools: [
        echo(log, { name: 'slow', executionMode: 'sequential', before: blockFirst }),
        echo(log, { name: 'fast' }),
      ],
    }));
  });
  afterAll(() => keel?.stop());

  async function runGated(input: AgentRunInput, firstStarted: string) {
    release = gate();
    const h = await keel.start(input);
    await until(() => (log.get(h.workflowId) ?? []).includes(firstStarted), 20_000, 'the first call to start');
    const whileBlocked = { executed: [...(log.get(h.workflowId) ?? [])], events: notation(await allEvents(h)) };
    release.open();
    return { h, r: await h.result(), whileBlocked };
  }

  const sequentialPhase = [
    'TES(tool-1)',
    'TEE(tool-1)',
    'MS(tr:tool-1)',
    'ME(tr:tool-1)',
    'TES(tool-2)',
    'TEE(tool-2)',
    'MS(tr:tool-2)',
    'ME(tr:tool-2)',
    'TE(tool-1,tool-2)',
  ];

  it('A.1-11: a tool with executionMode "sequential" overrides the default parallel mode', async () => {
    const { h, r, whileBlocked } = await runGated(
      { model: 'scripted/per-tool', prompt: 'two slow', tools: ['slow'] },
      'slow:first',
    );
    expect(whileBlocked.executed).toEqual(['slow:first']);
    expect(whileBlocked.events).not.toContain('TES(tool-2)');
    expect(r.status).toBe('completed');
    expect(log.get(h.workflowId)).toEqual(['slow:first', 'slow:second']);
    expect(
      r.newMessages.filter((m) => m.role === 'toolResult').map((m) => m.role === 'toolResult' && m.toolCallId),
    ).toEqual(['tool-1', 'tool-2']);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:two slow)',
      'ME(u:two slow)',
      'MS(a)',
      'ME(a)',
      ...sequentialPhase,
      'TS',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
  });

  it('A.1-12: one sequential tool makes the whole batch sequential: ["slow:a", "fast:b"]', async () => {
    const { h, r, whileBlocked } = await runGated(
      { model: 'scripted/mixed', prompt: 'slow then fast', tools: ['slow', 'fast'] },
      'slow:a',
    );
    expect(whileBlocked.executed).toEqual(['slow:a']);
    expect(whileBlocked.events).not.toContain('TES(tool-2)');
    expect(r.status).toBe('completed');
    expect(log.get(h.workflowId)).toEqual(['slow:a', 'fast:b']);
    expect(strip(r.newMessages)).toEqual([
      user('slow then fast'),
      toolUse([call('tool-1', 'slow', { value: 'a' }), call('tool-2', 'fast', { value: 'b' })]),
      result('tool-1', 'slow', 'echoed: a', { value: 'a' }),
      result('tool-2', 'fast', 'echoed: b', { value: 'b' }),
      reply('done'),
    ]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:slow then fast)',
      'ME(u:slow then fast)',
      'MS(a)',
      'ME(a)',
      ...sequentialPhase,
      'TS',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
  });
});

describe('A.1-14 prepareNextTurn replaces the context for the next request', () => {
  it.skip('no Keel equivalent: the run input (system prompt, model, options) is fixed for the run; there is no per-turn hook that replaces it', () => {});
});

describe('A.1-15 shouldStopAfterTurn → maxTurns ends the run after the turn (status stopped)', () => {
  let keel: Keel;
  let model: RecordingModel;
  const log: Log = new Map();
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        'one-turn': {
          replies: [{ toolCalls: [call('tool-1', 'echo', { value: 'hello' })] }, { text: 'should not run' }],
        },
        'one-turn-queued': {
          replies: [
            { toolCalls: [call('tool-1', 'echo', { value: 'hello' })] },
            { text: 'should not run' },
            { text: 'should not run either' },
          ],
        },
      },
      // For "hello later": a follow-up is queued while the first turn runs (Pi's follow-up provider that would return a message).
      tools: [
        echo(log, {
          before: async (_v, ctx) =>
            void (ctx.metadata.queueFollowUp && (await keel.client.getHandle(ctx.workflowId).followUp('later'))),
        }),
      ],
    }));
  });
  afterAll(() => keel?.stop());

  const expectedEvents = (prompt: string) => [
    'AS',
    'TS',
    `MS(u:${prompt})`,
    `ME(u:${prompt})`,
    'MS(a)',
    'ME(a)',
    'TES(tool-1)',
    'TEE(tool-1)',
    'MS(tr:tool-1)',
    'ME(tr:tool-1)',
    'TE(tool-1)',
    'AE',
  ];

  it('maxTurns 1: one model call, the tool ran, agent_end right after the first turn_end', async () => {
    const h = await keel.start({ model: 'scripted/one-turn', prompt: 'echo hello', tools: ['echo'], maxTurns: 1 });
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(r.turns).toBe(1);
    expect(model.requests('one-turn')).toHaveLength(1);
    expect(log.get(h.workflowId)).toEqual(['hello']);
    expect(roles(r.newMessages)).toEqual(['user', 'assistant', 'toolResult']);
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      toolUse([call('tool-1', 'echo', { value: 'hello' })]),
      result('tool-1', 'echo', 'echoed: hello', { value: 'hello' }),
    ]);
    expect(notation(await allEvents(h))).toEqual(expectedEvents('echo hello'));
  });

  it('maxTurns 1 with a follow-up queued during the turn: the queue is untouched and no further model call is made', async () => {
    const h = await keel.start({
      model: 'scripted/one-turn-queued',
      prompt: 'echo hello',
      tools: ['echo'],
      maxTurns: 1,
      metadata: { queueFollowUp: true },
    });
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      toolUse([call('tool-1', 'echo', { value: 'hello' })]),
      result('tool-1', 'echo', 'echoed: hello', { value: 'hello' }),
    ]);
    expect(model.requests('one-turn-queued')).toHaveLength(1);
    expect(r.status).toBe('stopped');
    expect(notation(await allEvents(h))).toEqual(expectedEvents('echo hello'));
    expect((await h.state()).queued).toEqual({ steering: 0, followUp: 1 });
  });
});

describe('A.1-16 / A.1-17 / A.1-18 the terminate rule', () => {
  let keel: Keel;
  let model: RecordingModel;
  const log: Log = new Map();
  const router = hookRouter();
  const forever = (name: string): Script => ({ rules: [{ toolCalls: [call('tool-1', name, { value: 'again' })] }] });
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        'all-terminate': forever('stopper'),
        'all-terminate-status': forever('stopper'),
        'some-terminate': {
          replies: [
            { toolCalls: [call('tool-1', 'picky', { value: 'first' }), call('tool-2', 'picky', { value: 'second' })] },
            { text: 'done' },
          ],
        },
        'after-terminate': forever('echo'),
      },
      tools: [
        echo(log, { name: 'stopper', extra: () => ({ terminate: true }) }),
        echo(log, { name: 'picky', extra: (v) => (v === 'first' ? { terminate: true } : {}) }),
        echo(log),
      ],
      hooks: router.hooks,
    }));
  });
  afterAll(() => keel?.stop());

  it('A.1-16: every result terminates → no follow-up model call', async () => {
    const h = await keel.start({ model: 'scripted/all-terminate', prompt: 'stop now', tools: ['stopper'] });
    const r = await h.result();
    expect(model.requests('all-terminate')).toHaveLength(1);
    expect(strip(r.newMessages)).toEqual([
      user('stop now'),
      toolUse([call('tool-1', 'stopper', { value: 'again' })]),
      result('tool-1', 'stopper', 'echoed: again', { value: 'again' }),
    ]);
    const events = await allEvents(h);
    expect(turnEnds(events)).toHaveLength(1);
    expect(notation(events)).toEqual([
      'AS',
      'TS',
      'MS(u:stop now)',
      'ME(u:stop now)',
      'MS(a)',
      'ME(a)',
      'TES(tool-1)',
      'TEE(tool-1)',
      'MS(tr:tool-1)',
      'ME(tr:tool-1)',
      'TE(tool-1)',
      'AE',
    ]);
    expect(teeOf(events)[0].result.terminate).toBe(true);
  });

  it('A.1-16: a run stopped by the terminate rule has status "stopped"', async () => {
    const h = await keel.start({ model: 'scripted/all-terminate-status', prompt: 'stop now', tools: ['stopper'] });
    const r = await h.result();
    expect(model.requests('all-terminate-status')).toHaveLength(1);
    expect(r.status).toBe('stopped');
  });

  it('A.1-17: not every result terminates → the loop continues', async () => {
    const h = await keel.start({ model: 'scripted/some-terminate', prompt: 'two picky', tools: ['picky'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(model.requests('some-terminate')).toHaveLength(2);
    expect(roles(r.newMessages)).toEqual(['user', 'assistant', 'toolResult', 'toolResult', 'assistant']);
    expect(strip(r.newMessages)).toEqual([
      user('two picky'),
      toolUse([call('tool-1', 'picky', { value: 'first' }), call('tool-2', 'picky', { value: 'second' })]),
      result('tool-1', 'picky', 'echoed: first', { value: 'first' }),
      result('tool-2', 'picky', 'echoed: second', { value: 'second' }),
      reply('done'),
    ]);
  });

  it('A.1-18: afterToolCall can mark termination', async () => {
    const id = wid();
    router.route(id, { afterToolCall: () => ({ terminate: true }) });
    const h = await keel.start({ model: 'scripted/after-terminate', prompt: 'echo once', tools: ['echo'] }, id);
    const r = await h.result();
    expect(model.requests('after-terminate')).toHaveLength(1);
    expect(log.get(id)).toEqual(['again']);
    expect(strip(r.newMessages)).toEqual([
      user('echo once'),
      toolUse([call('tool-1', 'echo', { value: 'again' })]),
      result('tool-1', 'echo', 'echoed: again', { value: 'again' }),
    ]);
    expect(turnEnds(await allEvents(h))).toHaveLength(1);
  });
});

describe('A.1-19 / A.1-20 / A.1-21 runs started with messages and no prompt (agentLoopContinue)', () => {
  let keel: Keel;
  let model: RecordingModel;
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        'continue-empty': { rules: [{ text: 'should not run' }] },
        continued: { rules: [{ text: 'Response' }] },
        'continued-tool': { rules: [{ match: 'toolResult:echo', text: 'after the tool' }] },
      },
      tools: [echo(new Map())],
    }));
  });
  afterAll(() => keel?.stop());

  it('A.1-19: an empty context fails the workflow at once with InvalidAgentInput "Cannot continue: no messages in context"', async () => {
    const workflowId = wid();
    // The raw Temporal client: no client-side validation in the way.
    const raw = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId,
      args: [{ model: 'scripted/continue-empty', messages: [] } satisfies AgentRunInput],
    });
    const err = await raw.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect((cause as ApplicationFailure).type).toBe('InvalidAgentInput');
    expect((cause as ApplicationFailure).nonRetryable).toBe(true);
    expect(cause?.message).toContain('Cannot continue: no messages in context');
    expect(model.requests('continue-empty')).toHaveLength(0);
    expect(await workflowTaskFailures(raw)).toEqual([]);
  });

  it('A.1-20: existing messages are not re-emitted; the result holds only the new assistant message', async () => {
    const h = await keel.start({ model: 'scripted/continued', messages: [priorUser('Hello')] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(strip(r.newMessages)).toEqual([reply('Response')]);
    const events = await allEvents(h);
    expect(notation(events)).toEqual(['AS', 'TS', 'MS(a)', 'ME(a)', 'TE()', 'AE']);
    expect(events.filter((e) => e.type === 'message_end')).toHaveLength(1);
    const end = events[events.length - 1];
    expect(end.type === 'agent_end' && strip(end.messages)).toEqual([reply('Response')]);
    expect(strip(model.requests('continued')[0].messages)).toEqual([user('Hello')]);
  });

  it("A.1-21 (Keel analogue): a toolResult tail is the caller's responsibility and continues without a throw", async () => {
    const prior: Message[] = [
      priorUser('echo hi'),
      {
        ...(priorReply('') as Extract<Message, { role: 'assistant' }>),
        content: [{ type: 'toolCall', id: 'tool-1', name: 'echo', arguments: { value: 'hi' } }],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 'tool-1',
        toolName: 'echo',
        content: [{ type: 'text', text: 'echoed: hi' }],
        details: { value: 'hi' },
        isError: false,
        timestamp: 1,
      },
    ];
    const h = await keel.start({ model: 'scripted/continued-tool', tools: ['echo'], messages: prior });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(strip(r.newMessages)).toEqual([reply('after the tool')]);
    expect(notation(await allEvents(h))).toEqual(['AS', 'TS', 'MS(a)', 'ME(a)', 'TE()', 'AE']);
  });

  it.skip('A.1-21 (custom role tail): out of scope — Keel transcripts have no custom roles and no convertToLlm', () => {});
});
