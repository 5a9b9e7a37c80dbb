/**
 * common/stream.ts `DeltaRecorder` (issue 33 item 1): with the provider's `grew` hint a delta costs O(delta), so a
 * 1 MiB tool call streamed in 64-character pieces is recorded in linear time; the items are the same with and without
 * the hint; an arguments object is serialised once, not once per snapshot; the window stays 16,384 characters; deltas
 * no heartbeat took yet join one item (issue 35 item 7: a window of a 300-token reply was 300 items, re-sent and
 * decoded at every heartbeat).
 */
import { describe, expect, it } from 'vitest';
import { DeltaRecorder, MAX_ITEM_CHARS, STREAM_WINDOW_CHARS, type DeltaItem } from '../../common/stream.js';
import { PartialMirror } from '../../activities/model/pi-ai-messages.js';
import { emptyUsage, type AssistantMessage } from '../../common/messages.js';

const message = (content: AssistantMessage['content']): AssistantMessage => ({
  role: 'assistant',
  content,
  api: 'test',
  provider: 'test',
  model: 'm',
  usage: emptyUsage(),
  stopReason: 'stop',
  timestamp: 0,
});
const call = (args: unknown) =>
  ({ type: 'toolCall', id: 'c1', name: 'write', arguments: args }) as AssistantMessage['content'][number];
const deltas = (items: DeltaItem[]) => items.map((i) => (i.t === 'delta' ? i.d : `<reset ${i.attempt}>`)).join('');

describe('DeltaRecorder', () => {
  it('records a 1 MiB tool call in 64-character deltas in linear time; the window keeps its last 16,384 characters', () => {
    const rec = new DeltaRecorder(1, 0, 1);
    const piece = 'y'.repeat(64);
    let text = '';
    const started = performance.now();
    for (let i = 0; i < 16_384; i++) {
      text += piece;
      rec.snapshot(message([call(text)]), { block: 0, text: piece });
    }
    const ms = performance.now() - started;
    expect(rec.streamedChars).toBe(1024 * 1024);
    // no heartbeat took an item in between: 16 deltas of 64 characters joined in each item of 1,024
    expect(rec.next).toBe(1024);
    const window = rec.detail();
    expect(deltas(window.items)).toBe('y'.repeat(STREAM_WINDOW_CHARS));
    expect(window.items[0]).toEqual({
      t: 'delta',
      b: 0,
      k: 'toolCall',
      d: 'y'.repeat(MAX_ITEM_CHARS),
      id: 'c1',
      name: 'write',
    });
    // 0.6.2 compared the whole text at every delta: seconds for this; now ~0.1 s even on a loaded machine
    expect(ms).toBeLessThan(2000);
  });

  it('gives the same items with the hint as without it, and replaces a block that did not grow at its end', () => {
    const snapshots: [AssistantMessage, { block: number; text: string } | undefined][] = [
      [message([{ type: 'thinking', thinking: 'hm' }]), { block: 0, text: 'hm' }],
      [message([{ type: 'thinking', thinking: 'hmm' }]), { block: 0, text: 'm' }],
      [
        message([
          { type: 'thinking', thinking: 'hmm' },
          { type: 'text', text: 'Hi' },
        ]),
        { block: 1, text: 'Hi' },
      ],
      [
        message([
          { type: 'thinking', thinking: 'hmm' },
          { type: 'text', text: 'Hi!' },
        ]),
        { block: 1, text: '!' },
      ],
      [
        message([
          { type: 'thinking', thinking: 'hmm' },
          { type: 'text', text: 'Ho' },
        ]),
        undefined,
      ],
    ];
    // a heartbeat after each snapshot (`detail()`): each delta is an item of its own
    const run = (hinted: boolean, heartbeats = true) => {
      const rec = new DeltaRecorder(3, 10, 2);
      for (const [m, grew] of snapshots) {
        rec.snapshot(m, hinted ? grew : undefined);
        if (heartbeats) rec.detail();
      }
      return rec.detail();
    };
    expect(run(true)).toEqual(run(false));
    expect(run(true, false)).toEqual(run(false, false));
    expect(run(true, false)).toEqual({
      messageIndex: 3,
      end: 14,
      items: [
        { t: 'reset', attempt: 2 },
        { t: 'delta', b: 0, k: 'thinking', d: 'hmm' },
        { t: 'delta', b: 1, k: 'text', d: 'Hi!' },
        { t: 'delta', b: 1, k: 'text', d: 'Ho', r: true },
      ],
    });
    expect(run(true)).toEqual({
      messageIndex: 3,
      end: 16,
      items: [
        { t: 'reset', attempt: 2 },
        { t: 'delta', b: 0, k: 'thinking', d: 'hm' },
        { t: 'delta', b: 0, k: 'thinking', d: 'm' },
        { t: 'delta', b: 1, k: 'text', d: 'Hi' },
        { t: 'delta', b: 1, k: 'text', d: '!' },
        { t: 'delta', b: 1, k: 'text', d: 'Ho', r: true },
      ],
    });
  });

  it('joins a delta to the item before it until a heartbeat or a fleet append takes that item, which then never changes', () => {
    const rec = new DeltaRecorder(0, 5, 1);
    const text = (t: string) => message([{ type: 'text', text: t }]);
    rec.snapshot(text('a'), { block: 0, text: 'a' });
    rec.snapshot(text('ab'), { block: 0, text: 'b' });
    const first = rec.detail();
    expect(first).toEqual({ messageIndex: 0, end: 6, items: [{ t: 'delta', b: 0, k: 'text', d: 'ab' }] });
    rec.snapshot(text('abc'), { block: 0, text: 'c' });
    rec.snapshot(text('abcd'), { block: 0, text: 'd' });
    expect(rec.itemsAfter(6)).toEqual({ first: 7, items: [{ t: 'delta', b: 0, k: 'text', d: 'cd' }] });
    rec.snapshot(text('abcde'), { block: 0, text: 'e' });
    // another block starts an item of its own; so does a delta past MAX_ITEM_CHARS
    rec.snapshot(message([{ type: 'text', text: 'abcde' }, call('{')]), { block: 1, text: '{' });
    const long = '{' + 'x'.repeat(MAX_ITEM_CHARS);
    rec.snapshot(message([{ type: 'text', text: 'abcde' }, call(long)]), {
      block: 1,
      text: 'x'.repeat(MAX_ITEM_CHARS),
    });
    expect(rec.detail()).toEqual({
      messageIndex: 0,
      end: 10,
      items: [
        { t: 'delta', b: 0, k: 'text', d: 'ab' },
        { t: 'delta', b: 0, k: 'text', d: 'cd' },
        { t: 'delta', b: 0, k: 'text', d: 'e' },
        { t: 'delta', b: 1, k: 'toolCall', d: '{', id: 'c1', name: 'write' },
        { t: 'delta', b: 1, k: 'toolCall', d: 'x'.repeat(MAX_ITEM_CHARS), id: 'c1', name: 'write' },
      ],
    });
    expect(first.items).toEqual([{ t: 'delta', b: 0, k: 'text', d: 'ab' }]);
  });

  it('serialises an arguments object once, not at every snapshot', () => {
    const args = { path: 'a.txt', content: 'x'.repeat(100) };
    let reads = 0;
    const counted = new Proxy(args, {
      get(target, key, receiver) {
        if (key === 'content') reads++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
    const rec = new DeltaRecorder(1, 0, 1);
    for (let i = 1; i <= 50; i++) rec.snapshot(message([call(counted), { type: 'text', text: 't'.repeat(i) }]));
    expect(reads).toBe(1);
    expect(deltas(rec.detail().items)).toBe(JSON.stringify(args) + 't'.repeat(50));
  });
});

describe("pi-ai's partial mirror", () => {
  it('mirrors a tool call as the JSON text received and says which snapshot block grew by what', () => {
    const mirror = new PartialMirror();
    const live = {
      role: 'assistant',
      content: [] as unknown[],
      usage: emptyUsage(),
      api: 'anthropic-messages',
      provider: 'anthropic',
      model: 'm',
      stopReason: 'stop',
      timestamp: 0,
    };
    const ev = (e: Record<string, unknown>) => ({ ...e, partial: live }) as never;
    live.content[0] = { type: 'text', text: '' };
    expect(mirror.apply(ev({ type: 'text_start', contentIndex: 0 }))).toBeUndefined();
    live.content[0] = { type: 'text', text: 'Ok' };
    expect(mirror.apply(ev({ type: 'text_delta', contentIndex: 0, delta: 'Ok' }))).toEqual({ block: 0, text: 'Ok' });
    live.content[1] = { type: 'toolCall', id: 't1', name: 'write', arguments: {} };
    mirror.apply(ev({ type: 'toolcall_start', contentIndex: 1 }));
    live.content[1] = { type: 'toolCall', id: 't1', name: 'write', arguments: { path: 'a' } };
    expect(mirror.apply(ev({ type: 'toolcall_delta', contentIndex: 1, delta: '{"path": "a' }))).toEqual({
      block: 1,
      text: '{"path": "a',
    });
    expect(mirror.apply(ev({ type: 'toolcall_delta', contentIndex: 1, delta: '"}' }))).toEqual({
      block: 1,
      text: '"}',
    });
    const snapshot = mirror.snapshot(live as never);
    expect(snapshot.content).toEqual([
      { type: 'text', text: 'Ok' },
      { type: 'toolCall', id: 't1', name: 'write', arguments: '{"path": "a"}' },
    ]);
    mirror.apply(
      ev({
        type: 'toolcall_end',
        contentIndex: 1,
        toolCall: { type: 'toolCall', id: 't1', name: 'write', arguments: { path: 'a' } },
      }),
    );
    expect(mirror.snapshot(live as never).content[1]).toEqual({
      type: 'toolCall',
      id: 't1',
      name: 'write',
      arguments: '{"path": "a"}',
    });
  });
});
