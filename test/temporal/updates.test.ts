/**
 * The Updates `followUp`, `steer`, `interrupt`, `end`, `cancel` (README "Updates"): each acknowledgement, each
 * validator's refusal with its exact text, the signals of the same names still working, and no WorkflowTaskFailed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { AgentRunHandle } from '../../client/agent-client.js';
import { followUpSignal, steerSignal } from '../../workflows/definitions.js';
import { acceptedUpdates, gate, refusal, startKeel, strip, until, workflowTaskFailures, type Keel } from './harness.js';

let hold = gate();
/** Ignores its AbortSignal on purpose: the run stays "being cancelled" until the test releases it. */
const holdTool = defineTool({
  name: 'hold',
  description: 'Waits until the test releases it.',
  parameters: { type: 'object', properties: {} },
  execute: async () => {
    await hold.promise;
    return { content: [{ type: 'text', text: 'held' }] };
  },
});

const scripts = {
  chat: {
    rules: [
      { match: 'toolResult:hold', text: 'hold returned' },
      { match: 'hold', toolCalls: [{ id: 'tool-1', name: 'hold', arguments: {} }] },
      { match: 'steered', text: 'saw the steer' },
      { match: 'more', text: 'more, as asked' },
      { text: 'hello' },
    ],
  },
};

const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });
const reply = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }], stopReason: 'stop' });

/** What became of an Update: `accepted`, or the refusal's text. */
const answer = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (e: Error) => e.message,
  );

describe('Updates with validators', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [holdTool] });
  });
  afterAll(() => keel?.stop());

  const session = async () => {
    const h = await keel.start({
      model: 'scripted/chat',
      prompt: 'hi',
      mode: 'session',
      tools: ['hold'],
      idleTimeout: '5m',
    });
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
    return h;
  };
  const holding = async (h: AgentRunHandle) => {
    await until(async () => (await h.state()).runningTools.length === 1, 20_000, 'hold running');
  };

  it('followUp answers the queue lengths; interrupt with nothing running answers false; end answers the final status', async () => {
    const h = await session();
    expect(await h.interrupt()).toEqual({ interrupted: false });
    expect(await h.followUp('more please')).toEqual({ queued: { steering: 0, followUp: 1 } });
    await until(
      async () => (await h.state()).runs === 2 && (await h.state()).status === 'waiting',
      20_000,
      'second run',
    );
    expect(await h.end()).toEqual({ status: 'completed' });
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([user('hi'), reply('hello'), user('more please'), reply('more, as asked')]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('steer during a tool batch answers the queue lengths; interrupt while running answers true and that the queued steers run next', async () => {
    hold = gate();
    const h = await session();
    await h.followUp('hold it');
    await holding(h);
    expect(await h.steer(['steered', { role: 'user', content: 'again' }])).toEqual({
      queued: { steering: 2, followUp: 0 },
    });
    expect(await h.interrupt()).toEqual({ interrupted: true, next: 'answers-queued' });
    hold.open();
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting after interrupt');
    // as answered: the steers were not left waiting, the session ran them at once
    expect((await h.state()).runs).toBe(3);
    expect(strip(await h.allMessages()).slice(-4)).toEqual([
      user('steered'),
      reply('saw the steer'),
      { role: 'user', content: 'again' },
      reply('hello'),
    ]);
    expect(await h.cancel('done')).toEqual({ status: 'cancelled' });
    expect((await h.result()).status).toBe('cancelled');
    // the cancel request is a local activity: nothing can race the close (0.1.0 had one UnhandledCommand here)
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('malformed messages and reasons are refused with what is wrong; nothing is queued', async () => {
    const h = await session();
    expect(await refusal(h.followUp(42 as never))).toBe(
      'followUp: must be text or a user message { role: "user", content }',
    );
    expect(await refusal(h.steer([]))).toBe('steer: expected at least one message, got an empty list');
    expect(await refusal(h.steer(['fine', { role: 'assistant', content: 'x' } as never]))).toBe(
      'steer.1.role: must be "user"',
    );
    expect(await refusal(h.followUp({ role: 'user', content: 7 } as never))).toBe(
      'followUp.content: must be text or a list of text and image blocks',
    );
    expect(await refusal(h.followUp({ role: 'user', content: 'x', timestamp: 'now' } as never))).toBe(
      'followUp.timestamp: must be number',
    );
    expect(await refusal(h.cancel(42 as never))).toBe('cancel: the reason must be text, got 42');
    expect(await refusal(h.approve(42 as never))).toBe(
      'approve: expected { toolCallId, argsDigest, approver, reason? }',
    );
    expect(await refusal(h.deny({ toolCallId: '', argsDigest: '', approver: '' }))).toBe(
      'deny: toolCallId must be a non-empty string; argsDigest must be a non-empty string; approver must be a non-empty name',
    );
    expect(await refusal(h.deny({ toolCallId: 'x', argsDigest: 'y', approver: 'a', reason: 5 as never }))).toBe(
      'deny: reason must be text',
    );
    expect(await refusal(h.approve({ toolCallId: 'x', argsDigest: 'y', approver: 'a' }))).toBe(
      'No tool call x is awaiting approval',
    );
    const st = await h.state();
    expect([st.queued, st.runs, st.status]).toEqual([{ steering: 0, followUp: 0 }, 1, 'waiting']);
    expect(await h.end()).toEqual({ status: 'completed' });
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('a run being cancelled or ending refuses what it can no longer do', async () => {
    hold = gate();
    const cancelling = await session();
    await cancelling.followUp('hold it');
    await holding(cancelling);
    const cancelled = cancelling.cancel('stop');
    // once the cancel Update is accepted its handler has run: every later Update sees the run being cancelled
    await until(async () => (await acceptedUpdates(cancelling, 'cancel')) === 1, 20_000, 'cancel accepted');
    expect(await refusal(cancelling.interrupt())).toBe('Cannot interrupt: the run is being cancelled');
    expect(await refusal(cancelling.followUp('more'))).toBe('Cannot queue a follow-up: the run is being cancelled');
    expect(await refusal(cancelling.steer('more'))).toBe('Cannot queue a steering message: the run is being cancelled');
    expect(await refusal(cancelling.end())).toBe('Cannot end: the run is being cancelled');
    hold.open();
    expect(await cancelled).toEqual({ status: 'cancelled' });

    hold = gate();
    const ending = await session();
    await ending.followUp('hold it');
    await holding(ending);
    const ended = ending.end();
    await until(async () => (await acceptedUpdates(ending, 'end')) === 1, 20_000, 'end accepted');
    expect(await refusal(ending.steer('more'))).toBe(
      'Cannot queue a steering message: the run is ending (end was requested)',
    );
    expect(await refusal(ending.followUp('more'))).toBe(
      'Cannot queue a follow-up: the run is ending (end was requested)',
    );
    hold.open();
    expect(await ended).toEqual({ status: 'completed' });
    expect(strip((await ending.result()).newMessages).slice(2)).toEqual([
      user('hold it'),
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'tool-1', name: 'hold', arguments: {} }],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 'tool-1',
        toolName: 'hold',
        content: [{ type: 'text', text: 'held' }],
        isError: false,
      },
      reply('hold returned'),
    ]);
    expect(await workflowTaskFailures(cancelling)).toEqual([]);
    expect(await workflowTaskFailures(ending)).toEqual([]);
  });

  it('an end waiting while the session continues-as-new is carried: end() still resolves with the final status', async () => {
    hold = gate();
    const h = await keel.start({
      model: 'scripted/chat',
      prompt: 'hold it',
      mode: 'session',
      tools: ['hold'],
      continueAsNewAfterBytes: 65_536,
    });
    await holding(h);
    const ended = h.end();
    await until(async () => (await acceptedUpdates(h, 'end')) === 1, 20_000, 'end accepted');
    expect(await refusal(h.followUp('more'))).toBe('Cannot queue a follow-up: the run is ending (end was requested)');
    const big = `steered ${'x'.repeat(70_000)}`;
    await h.workflow.signal(steerSignal, big); // 70 KB: continue-as-new at the next turn boundary
    hold.open();
    expect(await ended).toEqual({ status: 'completed' });
    // at least once: a new run that starts with more carried state than continueAsNewAfterBytes continues again
    // at its next turn boundary (0.1.0 behaviour, unchanged here)
    expect((await h.state()).continuedAsNew).toBeGreaterThanOrEqual(1);
    expect(strip(await h.allMessages()).slice(3)).toEqual([user(big), reply('saw the steer')]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('a closed run: the client says so in the same words', async () => {
    const h = await keel.start({ model: 'scripted/chat', prompt: 'hi' });
    await h.result();
    expect(await refusal(h.followUp('late'))).toBe('Cannot queue a follow-up: the run is completed');
    expect(await refusal(h.interrupt())).toBe('Cannot interrupt: the run is completed');
    expect(await refusal(h.end())).toBe('Cannot end: the run is completed');
    expect(await refusal(h.steer('late'))).toBe('Cannot queue a steering message: the run is completed');
    expect(await refusal(h.cancel('late'))).toBe('Cannot cancel: the run is completed');
    const decision = { toolCallId: 'x', argsDigest: 'y', approver: 'a' };
    expect(await refusal(h.approve(decision))).toBe('Cannot approve: the run is completed');
    expect(await refusal(h.deny(decision))).toBe('Cannot deny: the run is completed');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('the signals of the same names still work (fire and forget)', async () => {
    const h = await session();
    await h.workflow.signal(followUpSignal, 'more by signal');
    await until(
      async () => (await h.state()).runs === 2 && (await h.state()).status === 'waiting',
      20_000,
      'second run',
    );
    expect(strip(await h.allMessages()).slice(2)).toEqual([user('more by signal'), reply('more, as asked')]);
    await h.end();
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});
