/** docs/architecture.md#cancellation: abort reaches running tools and model calls; the transcript stays well-formed; no model call after an abort. */
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool, type AgentToolResult } from '../../activities/tools/define-tool.js';
import {
  allEvents,
  notation,
  startKeel,
  strip,
  until,
  untilStreaming,
  workflowTaskFailures,
  type Keel,
} from './harness.js';

let started = 0;
let abortedSeen = 0;
/** A tool that sleeps until its AbortSignal fires (like `sleep 30`). */
const sleepTool = defineTool({
  name: 'sleep',
  description: 'Sleeps for `seconds`.',
  parameters: { type: 'object', properties: { seconds: { type: 'number' } }, required: ['seconds'] },
  execute: (_id, args: { seconds: number }, signal) =>
    new Promise<AgentToolResult>((resolve, reject) => {
      started += 1;
      const t = setTimeout(() => resolve({ content: [{ type: 'text', text: 'slept' }] }), args.seconds * 1000);
      signal.addEventListener('abort', () => {
        clearTimeout(t);
        abortedSeen += 1;
        reject(new Error('sleep aborted'));
      });
    }),
});

const scripts = {
  sleeper: {
    rules: [
      { match: 'toolResult:sleep', text: 'done sleeping' },
      { match: 'nap', text: 'napping', toolCalls: [{ id: 'tool-1', name: 'sleep', arguments: { seconds: 30 } }] },
      { match: 'again', text: 'hello again' },
    ],
  },
  slow: {
    rules: [
      { match: 'again', text: 'quick' },
      { text: 'a very long answer streamed slowly, chunk by chunk', chunkDelayMs: 400 },
    ],
  },
};

/** The sleep tool's result when an abort stopped it. */
const sleepAborted = {
  role: 'toolResult',
  toolCallId: 'tool-1',
  toolName: 'sleep',
  content: [{ type: 'text', text: 'Operation aborted' }],
  details: {},
  isError: true,
};

describe('cancellation', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [sleepTool] });
  });
  afterAll(() => keel?.stop());

  it('interrupt stops a running tool, records Operation aborted, makes no further model call, and returns a session to waiting', async () => {
    const before = abortedSeen;
    const h = await keel.start({ model: 'scripted/sleeper', prompt: 'take a nap', tools: ['sleep'], mode: 'session' });
    await until(async () => (await h.state()).runningTools.length === 1, 20_000, 'sleep running');
    const t0 = Date.now();
    await h.interrupt();
    await until(async () => (await h.state()).status === 'waiting', 10_000, 'waiting');
    expect(Date.now() - t0).toBeLessThan(5_000);
    expect(abortedSeen).toBe(before + 1);
    const messages = await h.allMessages();
    expect(strip(messages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'take a nap' }] },
      {
        role: 'assistant',
        content: [
          { type: 'text', text: 'napping' },
          { type: 'toolCall', id: 'tool-1', name: 'sleep', arguments: { seconds: 30 } },
        ],
        stopReason: 'toolUse',
      },
      sleepAborted,
    ]);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:take a nap)',
      'ME(u:take a nap)',
      'MS(a)',
      'ME(a)',
      'TES(tool-1)',
      'TEE(tool-1)',
      'MS(tr:tool-1)',
      'ME(tr:tool-1)',
      'TE(tool-1)',
      'AE',
    ]);
    // the session goes on with the next follow-up
    await h.followUp('again');
    await until(
      async () => (await h.state()).status === 'waiting' && (await h.state()).turns === 2,
      20_000,
      'second run',
    );
    const after = await h.allMessages();
    expect(strip(after.slice(3))).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'again' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'hello again' }], stopReason: 'stop' },
    ]);
    await h.cancel('test over');
    const r = await h.result();
    expect(r.status).toBe('cancelled');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('cancel during a model call ends the message as aborted with the partial text, and the workflow as Canceled', async () => {
    const h = await keel.start({ model: 'scripted/slow', prompt: 'talk', mode: 'task' });
    await untilStreaming(h);
    await h.cancel('enough');
    const err = await h.workflow.result().catch((e) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
    const state = await h.state();
    expect(state.status).toBe('cancelled');
    const messages = await h.allMessages();
    expect(messages).toHaveLength(2);
    const a = messages[1];
    expect(a.role === 'assistant' && a.stopReason).toBe('aborted');
    const text = a.role === 'assistant' && a.content[0].type === 'text' ? a.content[0].text : '';
    expect(text.length).toBeGreaterThan(0);
    expect('a very long answer streamed slowly, chunk by chunk'.startsWith(text)).toBe(true);
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:talk)',
      'ME(u:talk)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('Temporal cancellation behaves like cancel: the tool is aborted and the workflow closes Canceled', async () => {
    const before = abortedSeen;
    const h = await keel.start({ model: 'scripted/sleeper', prompt: 'take a nap', tools: ['sleep'] });
    await until(async () => (await h.state()).runningTools.length === 1, 20_000, 'sleep running');
    await h.workflow.cancel();
    await h.workflow.result().catch(() => undefined);
    expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
    expect(abortedSeen).toBe(before + 1);
    const messages = await h.allMessages();
    expect(strip(messages.slice(2))).toEqual([sleepAborted]);
    expect((await h.state()).status).toBe('cancelled');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('cancel of a waiting session ends it as Canceled', async () => {
    const h = await keel.start({ model: 'scripted/sleeper', prompt: 'say again', mode: 'session' });
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
    await h.cancel();
    await h.workflow.result().catch(() => undefined);
    expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  // the `cancel` signal (0.1.0 showed an UnhandledCommand failed task before closing): every state a cancel can meet
  for (const state of ['a tool running', 'a model call streaming', 'waiting'] as const) {
    it(`the cancel signal with ${state} closes the run Canceled without a failed workflow task`, async () => {
      const before = abortedSeen;
      const h =
        state === 'a model call streaming'
          ? await keel.start({ model: 'scripted/slow', prompt: 'talk', mode: 'session' })
          : await keel.start({
              model: 'scripted/sleeper',
              prompt: state === 'waiting' ? 'say again' : 'take a nap',
              tools: ['sleep'],
              mode: 'session',
            });
      if (state === 'a tool running')
        await until(async () => (await h.state()).runningTools.length === 1, 20_000, 'sleep running');
      else if (state === 'waiting') await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
      else await untilStreaming(h);
      await h.workflow.signal('cancel', `cancelled with ${state}`);
      await h.workflow.result().catch(() => undefined);
      expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
      expect((await h.state()).status).toBe('cancelled');
      const last = (await h.allMessages()).at(-1)!;
      if (state === 'a tool running') {
        expect(abortedSeen).toBe(before + 1);
        expect(last.role === 'toolResult' && last.content).toEqual([{ type: 'text', text: 'Operation aborted' }]);
      } else if (state === 'a model call streaming')
        expect(last.role === 'assistant' && last.stopReason).toBe('aborted');
      else expect(last.role === 'assistant' && last.stopReason).toBe('stop');
      expect(await workflowTaskFailures(h)).toEqual([]);
    });
  }

  it('cancel (the Update) with a tool running: the tool is aborted, the run closes Canceled without a failed workflow task', async () => {
    const before = abortedSeen;
    const h = await keel.start({ model: 'scripted/sleeper', prompt: 'take a nap', tools: ['sleep'], mode: 'session' });
    await until(async () => (await h.state()).runningTools.length === 1, 20_000, 'sleep running');
    expect(await h.cancel('enough napping')).toEqual({ status: 'cancelled' });
    await h.workflow.result().catch(() => undefined);
    expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
    expect(abortedSeen).toBe(before + 1);
    expect(strip(await h.allMessages()).slice(2)).toEqual([sleepAborted]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('interrupt in task mode ends the run stopped', async () => {
    const h = await keel.start({ model: 'scripted/sleeper', prompt: 'take a nap', tools: ['sleep'] });
    await until(async () => (await h.state()).runningTools.length === 1, 20_000, 'sleep running');
    await h.interrupt();
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(r.newMessages.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult']);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});
