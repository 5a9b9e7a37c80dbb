/**
 * The live event stream (docs/architecture.md#live-output): `AgentRunHandle.stream()` delivers each event once, in
 * order, with increasing offsets; a reader that joins late or resumes from its last offset ends with the final
 * transcript's text, across a worker killed mid model attempt and across continue-as-new.
 */
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { ScriptedReply } from '../../activities/model/scripted.js';
import { messageText, type AssistantMessage, type Message } from '../../common/messages.js';
import type { ToolHeartbeat } from '../../common/events.js';
import { StreamView, blockText, type StreamEvent } from '../../common/stream.js';
import type { AgentRunHandle } from '../../client/agent-client.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import { ONE_REPLY_EVENT_TYPES, startKeel, until, type Keel } from './harness.js';
import { blobTool, progressTool } from './tool-fixtures.js';

const STREAM_WORKER = fileURLToPath(new URL('./fixtures/stream-worker.ts', import.meta.url));
const STREAM_REPLY = Array.from({ length: 50 }, (_, i) => `<${String(i).padStart(4, '0')}>`).join('');

afterAll(killAllWorkers);

/** Reads `h.stream(from)` until it ends or `until(events)` says stop; checks offsets increase (tool updates aside). */
async function read(
  h: AgentRunHandle,
  from: number,
  until: (events: StreamEvent[]) => boolean = () => false,
): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  let last = from;
  for await (const e of h.stream({ from })) {
    if (e.offset !== undefined) {
      expect(e.offset).toBeGreaterThan(last);
      last = e.offset;
    }
    out.push(e);
    if (until(out)) break;
  }
  return out;
}

/**
 * Applies `events` as a screen would and checks, at every delta, that each streamed block is a prefix of its final
 * form (never garbled or duplicated); returns the view.
 */
function apply(events: StreamEvent[], transcript: Message[]): StreamView {
  const view = new StreamView();
  for (const e of events) {
    view.apply(e);
    if (e.type !== 'message_update') continue;
    const final = transcript[e.messageIndex] as AssistantMessage;
    const block = final.content[e.block];
    const text =
      block.type === 'text' ? block.text : block.type === 'thinking' ? block.thinking : JSON.stringify(block.arguments);
    expect(text.startsWith(view.messages.get(e.messageIndex)![e.block].text)).toBe(true);
  }
  return view;
}

/**
 * Checks that the deltas alone (no `message_end`), applied in order, give every assistant message of the transcript
 * block by block, exactly: whether the reader saw a call live, joined after it, or resumed in the middle of it.
 */
function expectDeltasExact(events: StreamEvent[], transcript: Message[]): void {
  const view = apply(
    events.filter((e) => e.type !== 'message_end'),
    transcript,
  );
  const want = transcript.flatMap((m, i) => (m.role === 'assistant' ? [[i, m.content.map(blockText)]] : []));
  const got = [...view.messages].map(([i, blocks]) => [i, blocks.map((b) => b.text)]).sort(([a], [b]) => +a - +b);
  expect(got).toEqual(want);
}

const lastOffset = (events: StreamEvent[]) => events.findLast((e) => e.offset !== undefined)!.offset!;

describe('live event stream', () => {
  it('a reader from offset 0 that joins mid-run and one that disconnects and resumes end with the final text, across kill -9 of the worker mid model attempt', async () => {
    const taskQueue = `stream-${randomUUID()}`;
    const first = await spawnWorker(STREAM_WORKER, { KEEL_TASK_QUEUE: taskQueue, KEEL_CHUNK_MS: '150' });
    const keel = await startKeelClientOnly(taskQueue);
    const h = await keel.client.start(
      { model: 'scripted/stream', prompt: 'stream please', heartbeatTimeout: '2s' },
      { workflowId: `stream-${randomUUID()}` },
    );
    // reader B: from the start until it has seen five deltas of the first attempt, then it goes away
    const before = await read(h, 0, (es) => es.filter((e) => e.type === 'message_update').length >= 5);
    await killWorker(first);
    await spawnWorker(STREAM_WORKER, { KEEL_TASK_QUEUE: taskQueue, KEEL_CHUNK_MS: '30' });
    // reader A joins now, from offset 0; B resumes after the last offset it applied
    const [joined, after] = await Promise.all([read(h, 0), read(h, lastOffset(before))]);
    const transcript = await h.allMessages();
    expect(messageText(transcript[1])).toBe(STREAM_REPLY);

    const resumed = [...before, ...after];
    const offsets = resumed.flatMap((e) => (e.offset === undefined ? [] : [e.offset]));
    expect(new Set(offsets).size).toBe(offsets.length);
    expect(resumed.filter((e) => e.type === 'attempt_reset')).toEqual([
      expect.objectContaining({ type: 'attempt_reset', messageIndex: 1, attempt: 2 }),
    ]);
    for (const events of [resumed, joined]) {
      expectDeltasExact(events, transcript);
      expect(apply(events, transcript).text(1)).toBe(STREAM_REPLY);
      expect(
        events
          .filter((e) => e.offset !== undefined && e.type !== 'message_update' && e.type !== 'attempt_reset')
          .map((e) => e.type),
      ).toEqual(ONE_REPLY_EVENT_TYPES);
    }
    // the same events at the same offsets for both readers
    const durable = (es: StreamEvent[]) => es.filter((e) => e.type !== 'message_update').map((e) => [e.type, e.offset]);
    expect(durable(joined)).toEqual(
      durable(resumed).filter(([t]) => t !== 'attempt_reset' || durable(joined).some(([u]) => u === t)),
    );
    await keel.client.close();
  });
});

describe('live event stream, one worker', () => {
  const noop = defineTool({
    name: 'note',
    description: 'Notes a word.',
    parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    execute: async (_id, args: { word: string }) => ({ content: [{ type: 'text', text: `noted ${args.word}` }] }),
  });
  const { tool: progress, steps } = progressTool();
  const turns: ScriptedReply[] = [];
  for (let n = 1; n < 8; n++)
    turns.push({
      text: `turn ${n} `.repeat(12),
      // ~0.2 s of streaming per reply: a reply often completes between two heartbeats or two polls
      chunkDelayMs: 15,
      toolCalls: [{ name: 'blob', arguments: { kb: 24, n } }],
    });
  turns.push({ text: 'all done, every turn streamed', chunkDelayMs: 15 });
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      tools: [blobTool, noop, progress],
      scripts: {
        progress: {
          rules: [
            { match: 'toolResult:progress', text: 'finished' },
            { toolCalls: [{ id: 'tool-1', name: 'progress', arguments: { job: 'build' } }] },
          ],
        },
        long: { replies: turns },
        parallel: {
          replies: [
            {
              thinking: 'first I think about which words to note, then I note both at once',
              toolCalls: [
                { name: 'note', arguments: { word: 'alpha-alpha-alpha' } },
                { name: 'note', arguments: { word: 'omega-'.repeat(30) } },
              ],
              chunkDelayMs: 20,
            },
            { text: 'noted both', chunkDelayMs: 20 },
          ],
        },
      },
    });
  });
  afterAll(() => keel?.stop());

  it('across continue-as-new: offsets go on, a reader from 0 and a resuming reader end with every message streamed', async () => {
    const h = await keel.start({
      model: 'scripted/long',
      prompt: 'go',
      tools: ['blob'],
      continueAsNewAfterBytes: 65536,
    });
    const before = await read(h, 0, (es) => es.some((e) => e.type === 'turn_end'));
    // B resumes after the last offset it applied; A joins mid-run from offset 0
    const [after, joined] = await Promise.all([read(h, lastOffset(before)), read(h, 0)]);
    const late = await read(h, 0); // after the run closed: every durable event, from every run of the chain
    expect((await h.state()).continuedAsNew).toBeGreaterThanOrEqual(2);
    const transcript = await h.allMessages();
    // every reader ends with each assistant message's final text from the deltas alone: a call that finished between
    // two heartbeats or two polls (15 ms chunks: often), or during a slow read across continue-as-new, is completed by
    // its tail before its message_start
    for (const events of [[...before, ...after], joined, late]) {
      expectDeltasExact(events, transcript);
      const ends = events.filter((e) => e.type === 'message_end').map((e) => (e as { message: Message }).message);
      expect(ends).toEqual(transcript);
    }
    const durable = (es: StreamEvent[]) => es.filter((e) => e.type !== 'message_update').map((e) => e.offset);
    expect(durable(late)).toEqual(durable(joined));
  });

  it('tool updates come through the stream with offsets, between the tool start and end; a reader resuming after one goes on', async () => {
    const h = await keel.start({ model: 'scripted/progress', prompt: 'run the job', tools: ['progress'] });
    const first = await read(h, 0, (es) => es.some((e) => e.type === 'tool_execution_update'));
    steps[0].open();
    // the second update is on the server before B resumes (a resumed reader sends the latest snapshot it finds)
    await until(
      async () => {
        const payload = (await h.workflow.describe()).raw.pendingActivities?.[0]?.heartbeatDetails?.payloads?.[0];
        return payload ? defaultPayloadConverter.fromPayload<ToolHeartbeat>(payload).updates === 2 : false;
      },
      20_000,
      'the second update',
    );
    const second = await read(h, lastOffset(first), (es) =>
      es.some((e) => e.type === 'tool_execution_update' && e.updates === 2),
    );
    steps[1].open();
    const rest = await read(h, lastOffset(second));
    const all = [...first, ...second, ...rest];
    expect(
      all.flatMap((e) => (e.type === 'tool_execution_update' ? [[e.toolCallId, e.updates, e.partialResult]] : [])),
    ).toEqual([
      ['tool-1', 1, { content: [{ type: 'text', text: 'step 1 of 2' }], details: { step: 1 } }],
      ['tool-1', 2, { content: [{ type: 'text', text: 'step 2 of 2' }], details: { step: 2 } }],
    ]);
    // every event has an offset, increasing across the two resumes, none twice
    const offsets = all.map((e) => e.offset);
    expect(offsets).toEqual([...offsets].sort((a, b) => a - b));
    expect(new Set(offsets).size).toBe(offsets.length);
    const at = (type: string) => all.map((e) => e.type).indexOf(type as StreamEvent['type']);
    expect(at('tool_execution_start')).toBeLessThan(at('tool_execution_update'));
    expect(all.map((e) => e.type).lastIndexOf('tool_execution_update')).toBeLessThan(at('tool_execution_end'));
    expect(messageText((await h.allMessages()).at(-1)!)).toBe('finished');
  });

  it('deltas of a thinking block and two parallel tool calls arrive in order per block', async () => {
    const h = await keel.start({ model: 'scripted/parallel', prompt: 'note two words', tools: ['note'] });
    const events = await read(h, 0);
    const transcript = await h.allMessages();
    apply(events, transcript);
    const first = events.filter((e) => e.type === 'message_update' && e.messageIndex === 1) as Extract<
      StreamEvent,
      { type: 'message_update' }
    >[];
    const byBlock = (b: number) => first.filter((e) => e.block === b);
    expect(byBlock(0).every((e) => e.kind === 'thinking')).toBe(true);
    expect(byBlock(0).length).toBeGreaterThan(1);
    expect(byBlock(1).map((e) => [e.kind, e.toolCallId])).toEqual(byBlock(1).map(() => ['toolCall', 'call_1_1']));
    expect(byBlock(2).map((e) => [e.kind, e.toolCallId])).toEqual(byBlock(2).map(() => ['toolCall', 'call_1_2']));
    expect(byBlock(2).length).toBeGreaterThan(1);
    // blocks stream one after the other, and before the tools run
    const pos = (e: StreamEvent) => events.indexOf(e);
    expect(pos(byBlock(0).at(-1)!)).toBeLessThan(pos(byBlock(1)[0]));
    expect(pos(byBlock(1).at(-1)!)).toBeLessThan(pos(byBlock(2)[0]));
    expect(pos(byBlock(2).at(-1)!)).toBeLessThan(events.findIndex((e) => e.type === 'tool_execution_start'));
    expect(
      byBlock(2)
        .map((e) => e.delta)
        .join(''),
    ).toBe(
      JSON.stringify({ word: 'omega-'.repeat(30) }).slice(
        0,
        byBlock(2)
          .map((e) => e.delta)
          .join('').length,
      ),
    );
  });
});

/** A client on `taskQueue` (the workers run in child processes). */
async function startKeelClientOnly(taskQueue: string) {
  const { AgentClient } = await import('../../client/agent-client.js');
  const { inject } = await import('vitest');
  return { client: await AgentClient.connect({ address: inject('temporalAddress'), taskQueue }) };
}
