/**
 * Nothing a run accepted is lost: a message queued while an agent run ends by `maxTurns`, by a model error or by an
 * interrupt is answered by the next run of a session, or returned as `unprocessed` by a task. A waiting session with a
 * non-empty queue starts the next run at once. No test here may show a failed workflow task.
 */
import { WorkflowFailedError } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { gate, startKeel, strip, until, untilStreaming, workflowTaskFailures, type Keel } from './harness.js';

let hold = gate();
let holding = 0;
const holdTool = defineTool({
  name: 'hold',
  description: 'Waits until the test releases it.',
  parameters: { type: 'object', properties: {} },
  execute: async () => {
    holding += 1;
    await hold.promise;
    return { content: [{ type: 'text', text: 'held' }] };
  },
});

const user = (t: string) => ({ role: 'user', content: [{ type: 'text', text: t }] });
const reply = (t: string) => ({ role: 'assistant', content: [{ type: 'text', text: t }], stopReason: 'stop' });
const holdCall = {
  role: 'assistant',
  content: [{ type: 'toolCall', id: 'h-1', name: 'hold', arguments: {} }],
  stopReason: 'toolUse',
};
const held = {
  role: 'toolResult',
  toolCallId: 'h-1',
  toolName: 'hold',
  content: [{ type: 'text', text: 'held' }],
  isError: false,
};

const scripts = {
  turns: {
    rules: [
      { match: 'later', text: 'answered later' },
      { match: 'toolResult:hold', text: 'after the tool' },
      { match: 'go', toolCalls: [{ id: 'h-1', name: 'hold', arguments: {} }] },
    ],
  },
  failing: {
    rules: [
      { match: 'later', text: 'answered later' },
      { match: 'toolResult:hold', fail: { message: 'provider exploded', type: 'ModelError.Server', retryable: false } },
      { match: 'go', toolCalls: [{ id: 'h-1', name: 'hold', arguments: {} }] },
    ],
  },
  slow: {
    rules: [
      { match: 'later', text: 'answered later' },
      { match: 'talk', text: 'a slowly streamed answer that takes a while', chunkDelayMs: 300 },
    ],
  },
};

async function waitingIdle(h: Awaited<ReturnType<Keel['start']>>, turns: number) {
  await until(
    async () => {
      const s = await h.state();
      return (
        (s.status === 'waiting' || s.status === 'failed') &&
        s.turns >= turns &&
        s.queued.followUp === 0 &&
        s.queued.steering === 0
      );
    },
    30_000,
    `idle after ${turns} turns`,
  );
}

describe('messages accepted while a run ends are answered (session) or returned (task)', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [holdTool] });
  });
  afterAll(() => keel?.stop());

  // a steering message too: maxTurns ends the run before the steering poll that would have injected it
  for (const [queue, what] of [
    ['followUp', 'a follow-up'],
    ['steer', 'a steering message'],
  ] as const) {
    it(`${what} sent while the last turn allowed by maxTurns runs starts the next run`, async () => {
      hold = gate();
      holding = 0;
      const h = await keel.start({
        model: 'scripted/turns',
        prompt: 'go',
        tools: ['hold'],
        mode: 'session',
        maxTurns: 1,
      });
      await until(() => holding === 1, 20_000, 'tool running');
      await (queue === 'followUp' ? h.followUp('later') : h.steer('later'));
      hold.open();
      await waitingIdle(h, 2);
      expect(strip(await h.allMessages())).toEqual([
        user('go'),
        holdCall,
        held,
        user('later'),
        reply('answered later'),
      ]);
      expect((await h.state()).status).toBe('waiting');
      await h.end();
      const r = await h.result();
      expect(r.status).toBe('completed');
      expect(r.unprocessed).toBeUndefined();
      expect(await workflowTaskFailures(h)).toEqual([]);
    });
  }

  it('a follow-up queued during a run that ends in a model error is answered next', async () => {
    hold = gate();
    holding = 0;
    const h = await keel.start({ model: 'scripted/failing', prompt: 'go', tools: ['hold'], mode: 'session' });
    await until(() => holding === 1, 20_000, 'tool running');
    await h.followUp('later');
    hold.open();
    await waitingIdle(h, 3);
    const messages = await h.allMessages();
    // the failed run ends with its error message; then the queued follow-up is answered
    expect(strip(messages.slice(0, 3))).toEqual([user('go'), holdCall, held]);
    expect(messages[3]).toMatchObject({ role: 'assistant', stopReason: 'error', errorMessage: 'provider exploded' });
    expect(strip(messages.slice(4))).toEqual([user('later'), reply('answered later')]);
    await h.end();
    expect((await h.result()).status).toBe('completed');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  for (const order of ['interrupt, then follow-up', 'follow-up, then interrupt'] as const) {
    it(`${order} during a model call: the follow-up is answered`, async () => {
      const h = await keel.start({ model: 'scripted/slow', prompt: 'talk', mode: 'session' });
      await untilStreaming(h);
      if (order === 'interrupt, then follow-up') {
        await h.interrupt();
        await h.followUp('later');
      } else {
        await h.followUp('later');
        await h.interrupt();
      }
      await waitingIdle(h, 2);
      const messages = await h.allMessages();
      expect(messages.map((m) => (m.role === 'assistant' ? `assistant:${m.stopReason}` : m.role))).toEqual([
        'user',
        'assistant:aborted',
        'user',
        'assistant:stop',
      ]);
      expect(strip(messages.slice(2))).toEqual([user('later'), reply('answered later')]);
      await h.end();
      expect((await h.result()).status).toBe('completed');
      expect(await workflowTaskFailures(h)).toEqual([]);
    });
  }

  it('a task that ends by maxTurns returns the queued message as unprocessed, in the result and the final state', async () => {
    hold = gate();
    holding = 0;
    const h = await keel.start({ model: 'scripted/turns', prompt: 'go', tools: ['hold'], maxTurns: 1 });
    await until(() => holding === 1, 20_000, 'tool running');
    await h.followUp('later');
    hold.open();
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(strip(r.newMessages)).toEqual([user('go'), holdCall, held]);
    expect(strip(r.unprocessed ?? [])).toEqual([user('later')]);
    expect(strip((await h.state()).unprocessed ?? [])).toEqual([user('later')]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('a task that ends in a model error returns the queued message as unprocessed, in the failure and the final state', async () => {
    hold = gate();
    holding = 0;
    const h = await keel.start({ model: 'scripted/failing', prompt: 'go', tools: ['hold'] });
    await until(() => holding === 1, 20_000, 'tool running');
    await h.followUp('later');
    hold.open();
    const err = await h.workflow.result().catch((e: unknown) => e); // the execution fails, its result in the details
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const cause = (err as WorkflowFailedError).cause as ApplicationFailure;
    expect([cause.type, cause.message]).toEqual(['AgentRunFailed', 'provider exploded']);
    const r = await h.result(); // AgentRunHandle.result() reads it from there
    expect([r.status, r.error]).toEqual(['failed', 'provider exploded']);
    expect(cause.details).toEqual([r]);
    expect(strip(r.newMessages.slice(0, 3))).toEqual([user('go'), holdCall, held]);
    expect(strip(r.unprocessed ?? [])).toEqual([user('later')]);
    expect(strip((await h.state()).unprocessed ?? [])).toEqual([user('later')]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('a task interrupted during a model call returns a follow-up queued before the interrupt as unprocessed', async () => {
    const h = await keel.start({ model: 'scripted/slow', prompt: 'talk' });
    await untilStreaming(h);
    await h.followUp('later');
    await h.interrupt();
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(r.newMessages.map((m) => (m.role === 'assistant' ? `assistant:${m.stopReason}` : m.role))).toEqual([
      'user',
      'assistant:aborted',
    ]);
    expect(strip(r.unprocessed ?? [])).toEqual([user('later')]);
    expect(strip((await h.state()).unprocessed ?? [])).toEqual([user('later')]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});
