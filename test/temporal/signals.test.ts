/**
 * Pi's steering and follow-up poll points on Temporal (docs/architecture.md#steering-and-follow-up-poll-points): steering is polled once before the first model call and after every turn
 * (never during a tool batch); follow-ups only when the agent would stop; both queue modes; signals arriving during a
 * model call and during a tool batch.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { allEvents, gate, notation, startKeel, strip, until, untilStreaming, type Keel } from './harness.js';

let hold = gate();
const holdTool = defineTool({
  name: 'hold',
  description: 'Waits until the test releases it.',
  parameters: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
  execute: async (_id, args: { value: string }) => {
    await hold.promise;
    return { content: [{ type: 'text', text: `held ${args.value}` }] };
  },
});

const text = (t: string) => ({ role: 'user', content: [{ type: 'text', text: t }] });
const reply = (t: string) => ({ role: 'assistant', content: [{ type: 'text', text: t }], stopReason: 'stop' });

const scripts = {
  batch: {
    rules: [
      { match: 'toolResult:hold held 2', text: 'batch done' },
      {
        match: 'go',
        toolCalls: [
          { id: 'tool-1', name: 'hold', arguments: { value: '1' } },
          { id: 'tool-2', name: 'hold', arguments: { value: '2' } },
        ],
      },
      { match: 'steer-1', text: 'saw steer-1' },
      { match: 'steer-2', text: 'saw steer-2' },
      { match: 'follow-1', text: 'saw follow-1' },
      { match: 'follow-2', text: 'saw follow-2' },
    ],
  },
  slow: {
    rules: [
      { match: 'steer-1', text: 'saw steer-1' },
      { match: 'follow-1', text: 'saw follow-1' },
      { match: 'talk', text: 'a slowly streamed answer', chunkDelayMs: 150 },
    ],
  },
};

describe('signals and queue modes', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [holdTool] });
  });
  afterAll(() => keel?.stop());

  async function duringBatch(
    input: Record<string, unknown>,
    send: (h: Awaited<ReturnType<Keel['start']>>) => Promise<unknown>,
  ) {
    hold = gate();
    const h = await keel.start({ model: 'scripted/batch', prompt: 'go', tools: ['hold'], ...input });
    await until(async () => (await h.state()).runningTools.length === 2, 20_000, 'batch running');
    await send(h);
    await until(
      async () => {
        const q = (await h.state()).queued;
        return q.steering + q.followUp > 0;
      },
      20_000,
      'signal queued',
    );
    hold.open();
    return h;
  }

  it('steering sent during a tool batch is injected only after the whole batch, before the next model call', async () => {
    const h = await duringBatch({}, (h) => h.steer('steer-1'));
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      text('go'),
      {
        role: 'assistant',
        content: [
          { type: 'toolCall', id: 'tool-1', name: 'hold', arguments: { value: '1' } },
          { type: 'toolCall', id: 'tool-2', name: 'hold', arguments: { value: '2' } },
        ],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 'tool-1',
        toolName: 'hold',
        content: [{ type: 'text', text: 'held 1' }],
        isError: false,
      },
      {
        role: 'toolResult',
        toolCallId: 'tool-2',
        toolName: 'hold',
        content: [{ type: 'text', text: 'held 2' }],
        isError: false,
      },
      text('steer-1'),
      reply('saw steer-1'),
    ]);
    const ev = notation(await allEvents(h));
    expect(ev.slice(ev.indexOf('TE(tool-1,tool-2)'))).toEqual([
      'TE(tool-1,tool-2)',
      'TS',
      'MS(u:steer-1)',
      'ME(u:steer-1)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
  });

  it('a follow-up sent during a tool batch waits until the agent would stop', async () => {
    const h = await duringBatch({}, (h) => h.followUp('follow-1'));
    const r = await h.result();
    expect(strip(r.newMessages).slice(4)).toEqual([reply('batch done'), text('follow-1'), reply('saw follow-1')]);
  });

  it('steeringMode one-at-a-time injects one queued message per turn', async () => {
    const h = await duringBatch({}, async (h) => {
      await h.steer('steer-1');
      await h.steer('steer-2');
    });
    const r = await h.result();
    expect(strip(r.newMessages).slice(4)).toEqual([
      text('steer-1'),
      reply('saw steer-1'),
      text('steer-2'),
      reply('saw steer-2'),
    ]);
  });

  it('steeringMode all injects every queued message in one turn', async () => {
    const h = await duringBatch({ steeringMode: 'all' }, (h) => h.steer(['steer-1', 'steer-2']));
    const r = await h.result();
    expect(strip(r.newMessages).slice(4)).toEqual([text('steer-1'), text('steer-2'), reply('saw steer-2')]);
  });

  it('followUpMode one-at-a-time starts one turn per follow-up; all takes them together', async () => {
    const one = await duringBatch({}, (h) => h.followUp(['follow-1', 'follow-2']));
    expect(strip((await one.result()).newMessages).slice(4)).toEqual([
      reply('batch done'),
      text('follow-1'),
      reply('saw follow-1'),
      text('follow-2'),
      reply('saw follow-2'),
    ]);
    const all = await duringBatch({ followUpMode: 'all' }, (h) => h.followUp(['follow-1', 'follow-2']));
    expect(strip((await all.result()).newMessages).slice(4)).toEqual([
      reply('batch done'),
      text('follow-1'),
      text('follow-2'),
      reply('saw follow-2'),
    ]);
  });

  it('steering sent during a model call is injected at the next turn', async () => {
    const h = await keel.start({ model: 'scripted/slow', prompt: 'talk' });
    await untilStreaming(h);
    await h.steer('steer-1');
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      text('talk'),
      reply('a slowly streamed answer'),
      text('steer-1'),
      reply('saw steer-1'),
    ]);
  });

  it('a follow-up to a waiting session starts a new agent run (agent_start … agent_end again)', async () => {
    const h = await keel.start({ model: 'scripted/slow', prompt: 'talk', mode: 'session', idleTimeout: '1m' });
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
    await h.followUp('follow-1');
    await until(
      async () => (await h.state()).runs === 2 && (await h.state()).status === 'waiting',
      20_000,
      'second run',
    );
    expect(notation(await allEvents(h))).toEqual([
      'AS',
      'TS',
      'MS(u:talk)',
      'ME(u:talk)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
      'AS',
      'TS',
      'MS(u:follow-1)',
      'ME(u:follow-1)',
      'MS(a)',
      'ME(a)',
      'TE()',
      'AE',
    ]);
    await h.cancel();
  });
});
