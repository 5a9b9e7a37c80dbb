/**
 * The `callModel` heartbeat is bounded (common/model-heartbeat.ts): the streamed text travels once, in the delta
 * window (`deltas`, version 2), never the whole message; every reader still reads the 0.3–0.6.3 shape (`textLength`
 * and `tail`) and the 0.3 shape (the whole partial message).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { accountedAttempt } from '../../activities/model/call-model.js';
import { heartbeatUsage, type ModelHeartbeat } from '../../common/events.js';
import { emptyUsage, type AssistantMessage, type Usage } from '../../common/messages.js';
import { MODEL_HEARTBEAT_VERSION, modelHeartbeat, streamedText } from '../../common/model-heartbeat.js';
import { STREAM_WINDOW_CHARS, type DeltaItem } from '../../common/stream.js';

const usage = (tokens: number): Usage => ({ ...emptyUsage(), output: tokens, totalTokens: tokens });

const message = (text: string[], tokens = 0): AssistantMessage => ({
  role: 'assistant',
  content: [
    { type: 'thinking', thinking: 'x'.repeat(10_000) },
    ...text.map((t) => ({ type: 'text' as const, text: t })),
  ],
  api: 'test',
  provider: 'test',
  model: 'm',
  usage: usage(tokens),
  stopReason: 'stop',
  timestamp: 0,
});

const bytes = (details: unknown) => defaultPayloadConverter.toPayload(details)!.data!.length;
const text = (b: number, d: string, r?: true): DeltaItem => ({ t: 'delta', b, k: 'text', d, ...(r ? { r } : {}) });

describe('modelHeartbeat', () => {
  it('version 2: the usage, the attempt and seq, the delta window; no copy of the text beside it', () => {
    const deltas = { messageIndex: 1, end: 1, items: [text(1, 'hello')] };
    const h = modelHeartbeat(message(['a'.repeat(3000), 'b'.repeat(1000)], 7), { attempt: 2, seq: 5, deltas });
    expect(h).toEqual({ kind: 'model', v: MODEL_HEARTBEAT_VERSION, attempt: 2, seq: 5, usage: usage(7), deltas });
    expect(MODEL_HEARTBEAT_VERSION).toBe(2);
    expect(heartbeatUsage(h)).toEqual(usage(7));
    expect(heartbeatUsage({ ...h, failedUsage: usage(3) })).toEqual(usage(10));
  });

  it('the streamed text of a version 2 detail: the current attempt in the window, its length once it reaches back', () => {
    const items = [text(0, 'He'), text(0, 'llo'), text(1, ' there'), text(0, 'Hi', true)];
    expect(streamedText({ kind: 'model', v: 2, attempt: 1, deltas: { messageIndex: 1, end: 4, items } })).toEqual({
      attempt: 1,
      textLength: 8,
      tail: 'Hi there',
    });
    // the window no longer reaches the start: the length is unknown
    expect(streamedText({ kind: 'model', v: 2, deltas: { messageIndex: 1, end: 9, items } })).toEqual({
      tail: 'Hi there',
    });
    // a retried attempt: only what follows its reset
    const retried = [...items, { t: 'reset' as const, attempt: 2 }, text(0, 'Yo')];
    expect(streamedText({ kind: 'model', attempt: 2, deltas: { messageIndex: 1, end: 30, items: retried } })).toEqual({
      attempt: 2,
      textLength: 2,
      tail: 'Yo',
    });
    expect(
      streamedText({ kind: 'model', deltas: { messageIndex: 1, end: 30, items: [{ t: 'reset', attempt: 2 }] } }),
    ).toBeUndefined();
  });

  it('the readers read the 0.3–0.6.3 shape (textLength and tail) and the 0.3 shape (the whole partial message)', () => {
    const v1: ModelHeartbeat = {
      kind: 'model',
      attempt: 2,
      seq: 5,
      textLength: 4000,
      tail: 'the end',
      usage: usage(7),
    };
    expect(streamedText(v1)).toEqual({ attempt: 2, textLength: 4000, tail: 'the end' });
    expect(heartbeatUsage({ ...v1, failedUsage: usage(3) })).toEqual(usage(10));
    const old: ModelHeartbeat = { kind: 'model', partial: message(['Hello ', 'world'], 4), failedUsage: usage(1) };
    expect(streamedText(old)).toEqual({ textLength: 11, tail: 'Hello world' });
    expect(heartbeatUsage(old)).toEqual(usage(5));
    expect(streamedText({ kind: 'model', failedUsage: usage(1) })).toBeUndefined();
  });
});

describe('accountedAttempt heartbeats', () => {
  /** Streams a 200 KB reply in 2 KB chunks (letting a throttled heartbeat out now and then); the details sent. */
  async function stream200k(streaming?: { messageIndex: number }): Promise<{ sent: ModelHeartbeat[]; chunk: string }> {
    const env = new MockActivityEnvironment({ attempt: 1 });
    const sent: ModelHeartbeat[] = [];
    env.on('heartbeat', (d: unknown) => sent.push(d as ModelHeartbeat));
    const chunk = 'lorem ipsum dolor sit amet, '.repeat(74).slice(0, 2048); // 100 chunks of 2 KB: 200 KB
    const texts: string[] = [];
    await env.run(() =>
      accountedAttempt(
        undefined,
        async (onPartial) => {
          for (let i = 0; i < 100; i++) {
            texts.push(chunk);
            onPartial(message([texts.join('')], i));
            if (i % 20 === 19) await new Promise((r) => setTimeout(r, 260)); // let a throttled heartbeat out
          }
          return message([texts.join('')], 100);
        },
        streaming,
      ),
    );
    return { sent, chunk };
  }

  it('a 200 KB reply heartbeats at most 2.5 KB each without a delta log, in all linear in the reply, not quadratic', async () => {
    const { sent, chunk } = await stream200k();
    const sizes = sent.map(bytes);
    // one at the first delta, one after each pause
    expect(sent.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...sizes)).toBeLessThan(2500);
    const last = sent[sent.length - 1];
    expect(last).toMatchObject({ kind: 'model', v: 2, attempt: 1, usage: usage(last.seq! - 1) });
    expect(last.seq!).toBeGreaterThan(75);
    // the 0.3 shape sent the whole partial message each time
    const oldSizes = sent.map((h) => bytes({ kind: 'model', partial: message([chunk.repeat(h.seq!)], 0) }));
    console.log(
      `heartbeats of a 200 KB reply: ${sent.length}, max ${Math.max(...sizes)} B, total ${sizes.reduce((a, b) => a + b)} B` +
        ` (0.3 shape: max ${Math.max(...oldSizes)} B, total ${oldSizes.reduce((a, b) => a + b)} B)`,
    );
  });

  it('with the delta log, each heartbeat carries the window alone: the reply’s last characters once, no tail beside', async () => {
    const { sent, chunk } = await stream200k({ messageIndex: 1 });
    const sizes = sent.map(bytes);
    expect(sent.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...sizes)).toBeLessThan(STREAM_WINDOW_CHARS + 2500);
    const last = sent[sent.length - 1];
    expect(last.tail).toBeUndefined();
    expect(last.textLength).toBeUndefined();
    const st = streamedText(last)!;
    expect(st.textLength).toBeUndefined(); // 200 KB: the window no longer reaches the start
    expect(st.tail.endsWith(chunk)).toBe(true);
    expect(st.tail.length).toBeLessThanOrEqual(STREAM_WINDOW_CHARS);
  });
});
