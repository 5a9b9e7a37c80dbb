/**
 * Conformance with cases derived from Pi's loop source (not from its tests; abort behaves as in Pi's latest version),
 * mapped onto Keel (docs/architecture.md#the-loop): hooks are worker hooks, steering/follow-ups are signals (sent with signalWithStart when they must be
 * there before the first poll), abort is the `interrupt` signal. Whole transcripts, exact texts, exact event order.
 */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Script } from '../../activities/model/scripted.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { AfterToolCallContext, AgentHooks } from '../../activities/hooks.js';
import type { Message } from '../../common/messages.js';
import type { AgentRunInput } from '../../common/run.js';
import {
  call,
  ECHO_PARAMETERS,
  echo,
  keelWith,
  note,
  reply,
  result,
  teeOf,
  toolUse,
  user,
  type Log,
} from './loop-fixtures.js';
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

const wid = () => `loop-a5-${randomUUID()}`;

/** One echo call, then "done": the shape of most single-call cases. */
const oneCall = (name: string, args: Record<string, unknown>): Script => ({
  replies: [{ toolCalls: [call('tool-1', name, args)] }, { text: 'done' }],
});

/** Events of a run whose single call tool-1 ends and whose model is asked once more. */
const oneCallEvents = (prompt: string) => [
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
  'TS',
  'MS(a)',
  'ME(a)',
  'TE()',
  'AE',
];

// ---------------------------------------------------------------------------------------------------------------------

describe('A.5-1 … A.5-7, A.5-17, A.5-18 failures become error tool results', () => {
  let keel: Keel;
  let model: RecordingModel;
  const log: Log = new Map();
  const router = hookRouter();
  const thrower = defineTool<{ value: string }>({
    name: 'thrower',
    description: 'Throws.',
    parameters: ECHO_PARAMETERS,
    execute: async (_id, args, _signal, _onUpdate, ctx) => {
      note(log, ctx, `thrower:${args.value}`);
      if (args.value === 'boom') throw new Error('boom');
      throw args.value; // a non-Error throw (A.5-18)
    },
  });
  const silent = defineTool<{ value: string }>({
    name: 'silent',
    description: 'Returns no content.',
    parameters: ECHO_PARAMETERS,
    execute: async (_id, args) => ({ details: { value: args.value } }),
  });
  /** Records which hooks ran for a workflow. */
  const hookLog = new Map<string, string[]>();
  const recordHooks = (id: string, hooks: AgentHooks = {}) => {
    const seen: string[] = [];
    hookLog.set(id, seen);
    router.route(id, {
      beforeToolCall: (ctx, signal) => {
        seen.push(`before:${ctx.toolCall.id}`);
        return hooks.beforeToolCall?.(ctx, signal);
      },
      afterToolCall: (ctx, signal) => {
        seen.push(`after:${ctx.toolCall.id}:isError=${ctx.isError}`);
        return hooks.afterToolCall?.(ctx, signal);
      },
    });
    return seen;
  };
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        unknown: oneCall('nope', {}),
        'not-enabled-pair': {
          replies: [
            { toolCalls: [call('tool-1', 'nope', {}), call('tool-2', 'silent', { value: 'x' })] },
            { text: 'done' },
          ],
        },
        invalid: oneCall('echo', {}),
        'blocked-reason': oneCall('echo', { value: 'hello' }),
        'blocked-default': oneCall('echo', { value: 'hello' }),
        'blocked-terminate': {
          rules: [{ toolCalls: [call('tool-1', 'echo', { value: 'one' }), call('tool-2', 'echo', { value: 'two' })] }],
        },
        throws: oneCall('thrower', { value: 'boom' }),
        'throws-overridden': oneCall('thrower', { value: 'boom' }),
        'after-override': oneCall('echo', { value: 'hello' }),
        'after-throws': oneCall('echo', { value: 'hello' }),
        'before-throws': oneCall('echo', { value: 'hello' }),
        'no-content': oneCall('silent', { value: 'quiet' }),
        'throws-string': oneCall('thrower', { value: 'x' }),
      },
      tools: [echo(log), thrower, silent],
      hooks: router.hooks,
    }));
  });
  afterAll(() => keel?.stop());

  it('A.5-1: unknown tool → "Tool nope not found", details {}, and another model call', async () => {
    const h = await keel.start({ model: 'scripted/unknown', prompt: 'call nope', tools: ['echo'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(model.requests('unknown')).toHaveLength(2);
    expect(strip(r.newMessages)).toEqual([
      user('call nope'),
      toolUse([call('tool-1', 'nope', {})]),
      result('tool-1', 'nope', 'Tool nope not found', {}, true),
      reply('done'),
    ]);
    const events = await allEvents(h);
    expect(notation(events)).toEqual(oneCallEvents('call nope'));
    expect(teeOf(events)).toEqual([
      {
        id: 'tool-1',
        isError: true,
        result: { content: [{ type: 'text', text: 'Tool nope not found' }], details: {} },
      },
    ]);
  });

  // Keel's text, not Pi's (issue 33 item 20): a tool the worker has but the run did not enable says how to enable it
  it("A.5-1b: a tool registered on the worker but not enabled for the run → says so; Pi's text for one that exists nowhere", async () => {
    const h = await keel.start({ model: 'scripted/throws', prompt: 'explode', tools: ['echo'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(strip(r.newMessages)).toEqual([
      user('explode'),
      toolUse([call('tool-1', 'thrower', { value: 'boom' })]),
      result(
        'tool-1',
        'thrower',
        'thrower is registered on this worker but not enabled for this run: add --tools thrower',
        {},
        true,
      ),
      reply('done'),
    ]);
    // a parallel batch: each unknown call settled at preparation, with its own text
    const parallel = await keel.start({ model: 'scripted/not-enabled-pair', prompt: 'two', tools: ['echo'] });
    expect(strip((await parallel.result()).newMessages).slice(2, 4)).toEqual([
      result('tool-1', 'nope', 'Tool nope not found', {}, true),
      result(
        'tool-2',
        'silent',
        'silent is registered on this worker but not enabled for this run: add --tools silent',
        {},
        true,
      ),
    ]);
  });

  it('A.5-2: validation failure → the exact skeleton; no beforeToolCall, execute or afterToolCall', async () => {
    const id = wid();
    const hooks = recordHooks(id);
    const h = await keel.start({ model: 'scripted/invalid', prompt: 'echo nothing', tools: ['echo'] }, id);
    const r = await h.result();
    const text =
      'Validation failed for tool "echo":\n  - value: must have required properties value\n\nReceived arguments:\n{}';
    expect(strip(r.newMessages)).toEqual([
      user('echo nothing'),
      toolUse([call('tool-1', 'echo', {})]),
      result('tool-1', 'echo', text, {}, true),
      reply('done'),
    ]);
    expect(hooks).toEqual([]);
    expect(log.get(id)).toBeUndefined();
    const events = await allEvents(h);
    expect(notation(events)).toEqual(oneCallEvents('echo nothing'));
    expect(teeOf(events).map((t) => t.isError)).toEqual([true]);
  });

  it('A.5-3: beforeToolCall blocks with a reason → text "denied"; afterToolCall and execute do not run', async () => {
    const id = wid();
    const hooks = recordHooks(id, { beforeToolCall: () => ({ block: true, reason: 'denied' }) });
    const h = await keel.start({ model: 'scripted/blocked-reason', prompt: 'echo hello', tools: ['echo'] }, id);
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      toolUse([call('tool-1', 'echo', { value: 'hello' })]),
      result('tool-1', 'echo', 'denied', {}, true),
      reply('done'),
    ]);
    expect(hooks).toEqual(['before:tool-1']);
    expect(log.get(id)).toBeUndefined();
    expect(notation(await allEvents(h))).toEqual(oneCallEvents('echo hello'));
  });

  it('A.5-3: blocked without a reason → "Tool execution was blocked"', async () => {
    const id = wid();
    const hooks = recordHooks(id, { beforeToolCall: () => ({ block: true }) });
    const h = await keel.start({ model: 'scripted/blocked-default', prompt: 'echo hello', tools: ['echo'] }, id);
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      toolUse([call('tool-1', 'echo', { value: 'hello' })]),
      result('tool-1', 'echo', 'Tool execution was blocked', {}, true),
      reply('done'),
    ]);
    expect(hooks).toEqual(['before:tool-1']);
    expect(log.get(id)).toBeUndefined();
  });

  it('A.5-3: {block, terminate} on every call of the batch → no further model call', async () => {
    const id = wid();
    const hooks = recordHooks(id, { beforeToolCall: () => ({ block: true, terminate: true }) });
    const h = await keel.start({ model: 'scripted/blocked-terminate', prompt: 'echo twice', tools: ['echo'] }, id);
    const r = await h.result();
    expect(model.requests('blocked-terminate')).toHaveLength(1);
    expect(strip(r.newMessages)).toEqual([
      user('echo twice'),
      toolUse([call('tool-1', 'echo', { value: 'one' }), call('tool-2', 'echo', { value: 'two' })]),
      result('tool-1', 'echo', 'Tool execution was blocked', {}, true),
      result('tool-2', 'echo', 'Tool execution was blocked', {}, true),
    ]);
    expect(hooks).toEqual(['before:tool-1', 'before:tool-2']);
    // Both calls fail during preparation, so each ends at once (parallel mode, A.5-15).
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:echo twice)',
      'ME(u:echo twice)',
      'MS(a)',
      'ME(a)',
      'TES(tool-1)',
      'TEE(tool-1)',
      'TES(tool-2)',
      'TEE(tool-2)',
      'MS(tr:tool-1)',
      'ME(tr:tool-1)',
      'MS(tr:tool-2)',
      'ME(tr:tool-2)',
      'TE(tool-1,tool-2)',
      'AE',
    ]);
  });

  it('A.5-4: the tool throws Error("boom") → text "boom", details {}; afterToolCall sees isError true', async () => {
    const id = wid();
    const hooks = recordHooks(id);
    const h = await keel.start({ model: 'scripted/throws', prompt: 'explode', tools: ['thrower'] }, id);
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('explode'),
      toolUse([call('tool-1', 'thrower', { value: 'boom' })]),
      result('tool-1', 'thrower', 'boom', {}, true),
      reply('done'),
    ]);
    expect(hooks).toEqual(['before:tool-1', 'after:tool-1:isError=true']);
    expect(notation(await allEvents(h))).toEqual(oneCallEvents('explode'));
  });

  it('A.5-4: afterToolCall may override isError of a thrown call', async () => {
    const id = wid();
    let seen: Pick<AfterToolCallContext, 'isError' | 'result'> | undefined;
    recordHooks(id, {
      afterToolCall: (ctx) => {
        seen = { isError: ctx.isError, result: ctx.result };
        return { isError: false };
      },
    });
    const h = await keel.start({ model: 'scripted/throws-overridden', prompt: 'explode', tools: ['thrower'] }, id);
    const r = await h.result();
    expect(seen).toEqual({ isError: true, result: { content: [{ type: 'text', text: 'boom' }], details: {} } });
    expect(strip(r.newMessages)[2]).toEqual(result('tool-1', 'thrower', 'boom', {}, false));
  });

  it('A.5-5: afterToolCall {content, isError: true} → content replaced, details kept, isError true', async () => {
    const id = wid();
    recordHooks(id, { afterToolCall: () => ({ content: [{ type: 'text', text: 'x' }], isError: true }) });
    const h = await keel.start({ model: 'scripted/after-override', prompt: 'echo hello', tools: ['echo'] }, id);
    const r = await h.result();
    expect(log.get(id)).toEqual(['hello']);
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      toolUse([call('tool-1', 'echo', { value: 'hello' })]),
      result('tool-1', 'echo', 'x', { value: 'hello' }, true),
      reply('done'),
    ]);
    const events = await allEvents(h);
    expect(teeOf(events)).toEqual([
      { id: 'tool-1', isError: true, result: { content: [{ type: 'text', text: 'x' }], details: { value: 'hello' } } },
    ]);
  });

  it('A.5-6: afterToolCall throws Error("hook") → text "hook", details {}, isError true', async () => {
    const id = wid();
    recordHooks(id, {
      afterToolCall: () => {
        throw new Error('hook');
      },
    });
    const h = await keel.start({ model: 'scripted/after-throws', prompt: 'echo hello', tools: ['echo'] }, id);
    const r = await h.result();
    expect(log.get(id)).toEqual(['hello']);
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      toolUse([call('tool-1', 'echo', { value: 'hello' })]),
      result('tool-1', 'echo', 'hook', {}, true),
      reply('done'),
    ]);
    expect(notation(await allEvents(h))).toEqual(oneCallEvents('echo hello'));
  });

  it('A.5-7: beforeToolCall throws Error("pre") → immediate error "pre"; execute and afterToolCall do not run', async () => {
    const id = wid();
    const hooks = recordHooks(id, {
      beforeToolCall: () => {
        throw new Error('pre');
      },
    });
    const h = await keel.start({ model: 'scripted/before-throws', prompt: 'echo hello', tools: ['echo'] }, id);
    const r = await h.result();
    expect(log.get(id)).toBeUndefined();
    expect(hooks).toEqual(['before:tool-1']);
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      toolUse([call('tool-1', 'echo', { value: 'hello' })]),
      result('tool-1', 'echo', 'pre', {}, true),
      reply('done'),
    ]);
    expect(notation(await allEvents(h))).toEqual(oneCallEvents('echo hello'));
  });

  it('A.5-17: a tool that returns no content → tool-result content []', async () => {
    const h = await keel.start({ model: 'scripted/no-content', prompt: 'be quiet', tools: ['silent'] });
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('be quiet'),
      toolUse([call('tool-1', 'silent', { value: 'quiet' })]),
      {
        role: 'toolResult',
        toolCallId: 'tool-1',
        toolName: 'silent',
        content: [],
        details: { value: 'quiet' },
        isError: false,
      },
      reply('done'),
    ]);
  });

  it('A.5-18: a non-Error throw ("x") → text "x"', async () => {
    const h = await keel.start({ model: 'scripted/throws-string', prompt: 'throw a string', tools: ['thrower'] });
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('throw a string'),
      toolUse([call('tool-1', 'thrower', { value: 'x' })]),
      result('tool-1', 'thrower', 'x', {}, true),
      reply('done'),
    ]);
  });
});

/**
 * The hook of tool-1 interrupts the run (as Pi's hook aborts the signal) and waits until its own signal is aborted.
 * That call's result is `Operation aborted`; tool-2 gets no events and no result; LATEST: no further model call.
 */
describe('A.5-8 abort inside beforeToolCall', () => {
  let keel: Keel;
  let model: RecordingModel;
  const log: Log = new Map();
  const router = hookRouter();
  const twoCalls: Script = {
    replies: [
      { toolCalls: [call('tool-1', 'echo', { value: 'one' }), call('tool-2', 'echo', { value: 'two' })] },
      { text: 'should not run' },
    ],
  };
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: { 'abort-parallel': twoCalls, 'abort-sequential': twoCalls },
      tools: [echo(log)],
      hooks: router.hooks,
    }));
  });
  afterAll(() => keel?.stop());

  function abortingHook(id: string): string[] {
    const seen: string[] = [];
    router.route(id, {
      beforeToolCall: async (ctx, signal) => {
        seen.push(`before:${ctx.toolCall.id}`);
        if (ctx.toolCall.id !== 'tool-1') return;
        await keel.client.getHandle(id).interrupt();
        await new Promise<void>((resolve, reject) => {
          if (signal.aborted) return resolve();
          const t = setTimeout(() => reject(new Error('the hook signal was never aborted')), 8_000);
          signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
        });
      },
      afterToolCall: (ctx) => void seen.push(`after:${ctx.toolCall.id}`),
    });
    return seen;
  }

  for (const mode of ['parallel', 'sequential'] as const) {
    it(`${mode}: tool-1 → "Operation aborted"; tool-2 gets nothing; the run ends without another model call`, async () => {
      const id = wid();
      const hooks = abortingHook(id);
      const h = await keel.start(
        { model: `scripted/abort-${mode}`, prompt: 'echo twice', tools: ['echo'], toolExecution: mode },
        id,
      );
      const r = await h.result();
      expect(strip(r.newMessages)).toEqual([
        user('echo twice'),
        toolUse([call('tool-1', 'echo', { value: 'one' }), call('tool-2', 'echo', { value: 'two' })]),
        result('tool-1', 'echo', 'Operation aborted', {}, true),
      ]);
      const events = await allEvents(h);
      expect(notation(events)).toEqual([
        'AS',
        'TS',
        'MS(u:echo twice)',
        'ME(u:echo twice)',
        'MS(a)',
        'ME(a)',
        'TES(tool-1)',
        'TEE(tool-1)',
        'MS(tr:tool-1)',
        'ME(tr:tool-1)',
        'TE(tool-1)',
        'AE',
      ]);
      expect(teeOf(events).map((t) => t.isError)).toEqual([true]);
      expect(hooks).toEqual(['before:tool-1']);
      expect(log.get(id)).toBeUndefined();
      expect(model.requests(`abort-${mode}`)).toHaveLength(1);
      expect(r.status).toBe('stopped');
    });
  }
});

describe('A.5-9 provider error (or abort) with tool calls', () => {
  let keel: Keel;
  let model: RecordingModel;
  const log: Log = new Map();
  const hookCalls: string[] = [];
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        'provider-error': {
          rules: [{ toolCalls: [call('tool-1', 'echo', { value: 'hello' })], stopReason: 'error', errorMessage: 'E' }],
        },
        'provider-aborted': {
          rules: [
            {
              toolCalls: [call('tool-1', 'echo', { value: 'hello' })],
              stopReason: 'aborted',
              errorMessage: 'Operation aborted',
            },
          ],
        },
      },
      tools: [echo(log)],
      hooks: {
        beforeToolCall: () => void hookCalls.push('before'),
        afterToolCall: () => void hookCalls.push('after'),
      },
    }));
  });
  afterAll(() => keel?.stop());

  it('error: MS/ME(a), TE(a,[]), AE; no tool events; steering queued meanwhile is not polled; the run fails with "E"', async () => {
    const hold = model.hold('provider-error');
    const h = await keel.start({ model: 'scripted/provider-error', prompt: 'echo hello', tools: ['echo'] });
    await hold.reached;
    await h.steer('steer while streaming');
    hold.open();
    const r = await h.result();
    expect(r.status).toBe('failed');
    expect(r.error).toBe('E');
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      { ...toolUse([call('tool-1', 'echo', { value: 'hello' })], 'error'), errorMessage: 'E' },
    ]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:echo hello)',
      'ME(u:echo hello)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    expect(log.get(h.workflowId)).toBeUndefined();
    expect(hookCalls).toEqual([]);
    expect(model.requests('provider-error')).toHaveLength(1);
    const state = await h.state();
    expect(state.queued).toEqual({ steering: 1, followUp: 0 });
    expect(state.lastError).toBe('E');
  });

  it('aborted: MS/ME(a), TE(a,[]), AE; no tool events', async () => {
    const h = await keel.start({ model: 'scripted/provider-aborted', prompt: 'echo hello', tools: ['echo'] });
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('echo hello'),
      { ...toolUse([call('tool-1', 'echo', { value: 'hello' })], 'aborted'), errorMessage: 'Operation aborted' },
    ]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:echo hello)',
      'ME(u:echo hello)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    expect(log.get(h.workflowId)).toBeUndefined();
    expect(hookCalls).toEqual([]);
    expect(model.requests('provider-aborted')).toHaveLength(1);
  });
});

describe('A.5-10 / A.5-11 / A.5-12 steering and follow-ups (signals)', () => {
  let keel: Keel;
  let model: RecordingModel;
  const log: Log = new Map();
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: {
        'start-steering': { replies: [{ text: 'steered reply' }, { text: 'should not run' }] },
        'follow-up': { replies: [{ text: 'first reply' }, { text: 'follow-up reply' }, { text: 'should not run' }] },
        'terminate-steer': {
          replies: [
            { toolCalls: [call('tool-1', 'stopper', { value: 'first' })] },
            { text: 'after steering' },
            { text: 'should not run' },
          ],
        },
      },
      tools: [
        // A terminating tool; on its first call a steering message arrives (polled after the turn).
        echo(log, {
          name: 'stopper',
          extra: () => ({ terminate: true }),
          before: async (value, ctx) =>
            void (value === 'first' && (await keel.client.getHandle(ctx.workflowId).steer('s'))),
        }),
      ],
    }));
  });
  afterAll(() => keel?.stop());

  /** Starts the run with a signal already queued, so it is there before the first poll. */
  async function startWithSignal(input: AgentRunInput, signal: 'steer' | 'followUp', text: string) {
    const workflowId = wid();
    await keel.client.client.workflow.signalWithStart('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId,
      args: [input],
      signal,
      signalArgs: [text],
    });
    return keel.client.getHandle(workflowId);
  }

  it('A.5-10: steering present at start is injected after the prompt, in the first turn (no second TS)', async () => {
    const h = await startWithSignal({ model: 'scripted/start-steering', prompt: 'go' }, 'steer', 's');
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(strip(r.newMessages)).toEqual([user('go'), user('s'), reply('steered reply')]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:go)',
      'ME(u:go)',
      'MS(u:s)',
      'ME(u:s)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    const requests = model.requests('start-steering');
    expect(requests).toHaveLength(1);
    expect(strip(requests[0].messages)).toEqual([user('go'), user('s')]);
  });

  it('A.5-11: a follow-up starts a new turn when the agent would stop', async () => {
    const h = await startWithSignal({ model: 'scripted/follow-up', prompt: 'go' }, 'followUp', 'f');
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(strip(r.newMessages)).toEqual([user('go'), reply('first reply'), user('f'), reply('follow-up reply')]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:go)',
      'ME(u:go)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'TS',
      'MS(u:f)',
      'ME(u:f)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    expect(model.requests('follow-up')).toHaveLength(2);
  });

  it('A.5-12: terminate does not suppress steering polled after the turn', async () => {
    const h = await keel.start({ model: 'scripted/terminate-steer', prompt: 'stop', tools: ['stopper'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(log.get(h.workflowId)).toEqual(['stopper:first']);
    expect(model.requests('terminate-steer')).toHaveLength(2);
    expect(strip(r.newMessages)).toEqual([
      user('stop'),
      toolUse([call('tool-1', 'stopper', { value: 'first' })]),
      result('tool-1', 'stopper', 'echoed: first', { value: 'first' }),
      user('s'),
      reply('after steering'),
    ]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:stop)',
      'ME(u:stop)',
      'MS(a)',
      'ME(a)',
      'TES(tool-1)',
      'TEE(tool-1)',
      'MS(tr:tool-1)',
      'ME(tr:tool-1)',
      'TE(tool-1)',
      'TS',
      'MS(u:s)',
      'ME(u:s)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
  });
});

describe('A.5-13 / A.5-14 streaming and tool progress', () => {
  it.skip('A.5-13: message_update is a heartbeat of the callModel activity in Keel (docs/architecture.md#heartbeats), not an event; live progress is covered by another suite', () => {});
  it.skip('A.5-14: tool_execution_update is a heartbeat of the tool activity in Keel (docs/architecture.md#heartbeats), not an event; live progress is covered by another suite', () => {});
});

describe('A.5-15 / A.5-16 / A.5-21 tool-phase ordering', () => {
  let keel: Keel;
  const log: Log = new Map();
  let release = gate();
  beforeAll(async () => {
    ({ keel } = await keelWith({
      scripts: {
        'immediate-first': {
          replies: [
            { toolCalls: [call('tool-1', 'nope', {}), call('tool-2', 'echo', { value: 'hello' })] },
            { text: 'done' },
          ],
        },
        sequential: {
          replies: [
            { toolCalls: [call('tool-1', 'echo', { value: 'first' }), call('tool-2', 'echo', { value: 'second' })] },
            { text: 'done' },
          ],
        },
        timing: {
          replies: [
            { toolCalls: [call('tool-1', 'echo', { value: 'first' }), call('tool-2', 'echo', { value: 'second' })] },
            { text: 'done' },
          ],
        },
      },
      tools: [
        echo(log, {
          before: async (value, ctx) => void (ctx.metadata.gated && value === 'first' && (await release.promise)),
        }),
      ],
    }));
  });
  afterAll(() => keel?.stop());

  it('A.5-15: parallel with an immediate failure first: its TEE comes during preparation; results in source order', async () => {
    const h = await keel.start({ model: 'scripted/immediate-first', prompt: 'nope then echo', tools: ['echo'] });
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('nope then echo'),
      toolUse([call('tool-1', 'nope', {}), call('tool-2', 'echo', { value: 'hello' })]),
      result('tool-1', 'nope', 'Tool nope not found', {}, true),
      result('tool-2', 'echo', 'echoed: hello', { value: 'hello' }),
      reply('done'),
    ]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:nope then echo)',
      'ME(u:nope then echo)',
      'MS(a)',
      'ME(a)',
      'TES(tool-1)',
      'TEE(tool-1)',
      'TES(tool-2)',
      'TEE(tool-2)',
      'MS(tr:tool-1)',
      'ME(tr:tool-1)',
      'MS(tr:tool-2)',
      'ME(tr:tool-2)',
      'TE(tool-1,tool-2)',
      'TS',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
  });

  it('A.5-16: sequential ordering: start, end and result of each call before the next call starts', async () => {
    const h = await keel.start({
      model: 'scripted/sequential',
      prompt: 'two in a row',
      tools: ['echo'],
      toolExecution: 'sequential',
    });
    const r = await h.result();
    expect(log.get(h.workflowId)).toEqual(['first', 'second']);
    expect(strip(r.newMessages)).toEqual([
      user('two in a row'),
      toolUse([call('tool-1', 'echo', { value: 'first' }), call('tool-2', 'echo', { value: 'second' })]),
      result('tool-1', 'echo', 'echoed: first', { value: 'first' }),
      result('tool-2', 'echo', 'echoed: second', { value: 'second' }),
      reply('done'),
    ]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:two in a row)',
      'ME(u:two in a row)',
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
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
  });

  it('A.5-21: in parallel mode the transcript gets the tool results only after every tool finished, in source order', async () => {
    release = gate();
    const h = await keel.start({
      model: 'scripted/timing',
      prompt: 'two at once',
      tools: ['echo'],
      metadata: { gated: true },
    });
    await until(async () => notation(await allEvents(h)).includes('TEE(tool-2)'), 20_000, 'tool-2 to finish');
    // tool-2 has finished, tool-1 is held: the transcript has no tool result yet.
    expect(strip(await h.allMessages())).toEqual([
      user('two at once'),
      toolUse([call('tool-1', 'echo', { value: 'first' }), call('tool-2', 'echo', { value: 'second' })]),
    ]);
    release.open();
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('two at once'),
      toolUse([call('tool-1', 'echo', { value: 'first' }), call('tool-2', 'echo', { value: 'second' })]),
      result('tool-1', 'echo', 'echoed: first', { value: 'first' }),
      result('tool-2', 'echo', 'echoed: second', { value: 'second' }),
      reply('done'),
    ]);
  });
});

describe('A.5-19 / A.5-20 run input (Agent.continue / prompt)', () => {
  let keel: Keel;
  let model: RecordingModel;
  beforeAll(async () => {
    ({ keel, model } = await keelWith({
      scripts: { 'assistant-tail': { rules: [{ text: 'should not run' }] }, images: { rules: [{ text: 'I see it' }] } },
    }));
  });
  afterAll(() => keel?.stop());

  it('A.5-19: messages ending with an assistant message and no prompt → InvalidAgentInput "Cannot continue from message role: assistant"', async () => {
    const messages: Message[] = [
      { role: 'user', content: [{ type: 'text', text: 'Initial' }], timestamp: 1 },
      {
        role: 'assistant',
        content: [{ type: 'text', text: 'Initial response' }],
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
        timestamp: 2,
      },
    ];
    const raw = await keel.client.client.workflow.start('agentWorkflow', {
      taskQueue: keel.taskQueue,
      workflowId: wid(),
      args: [{ model: 'scripted/assistant-tail', messages } satisfies AgentRunInput],
    });
    const err = await raw.result().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
    expect(cause).toBeInstanceOf(ApplicationFailure);
    expect(cause.type).toBe('InvalidAgentInput');
    expect(cause.message).toContain('Cannot continue from message role: assistant');
    expect(model.requests('assistant-tail')).toHaveLength(0);
    expect(await workflowTaskFailures(raw)).toEqual([]);
  });

  it('A.5-20: a prompt of text and images becomes one user message with content [text, ...images]', async () => {
    const image = { type: 'image' as const, data: 'iVBORw0KGgo=', mimeType: 'image/png' };
    const h = await keel.start({
      model: 'scripted/images',
      prompt: [{ role: 'user', content: [{ type: 'text', text: 'look' }, image] }],
    });
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'look' }, image] },
      reply('I see it'),
    ]);
    expect(strip(model.requests('images')[0].messages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'look' }, image] },
    ]);
  });
});
