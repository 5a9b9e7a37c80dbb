/**
 * The `callModel` heartbeat is bounded (common/model-heartbeat.ts): a long reply heartbeats its text's length and
 * tail, never the whole message, and every reader still reads the 0.3 shape (the whole partial message).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { describe, expect, it } from 'vitest';
import { accountedAttempt } from '../../activities/model/call-model.js';
import { heartbeatUsage, type ModelHeartbeat } from '../../common/events.js';
import { emptyUsage, type AssistantMessage, type Usage } from '../../common/messages.js';
import { MODEL_HEARTBEAT_TAIL_CHARS, modelHeartbeat, streamedText } from '../../common/model-heartbeat.js';

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

describe('modelHeartbeat', () => {
  it('carries the text length and its last 2048 characters across blocks, the usage, the attempt and seq', () => {
    const h = modelHeartbeat(message(['a'.repeat(3000), 'b'.repeat(1000)], 7), { attempt: 2, seq: 5 });
    expect(h).toMatchObject({ kind: 'model', attempt: 2, seq: 5, textLength: 4000, usage: usage(7) });
    expect(h.tail).toBe('a'.repeat(MODEL_HEARTBEAT_TAIL_CHARS - 1000) + 'b'.repeat(1000));
    expect(h.failedUsage).toBeUndefined();
    expect(heartbeatUsage(h)).toEqual(usage(7));
    expect(heartbeatUsage({ ...h, failedUsage: usage(3) })).toEqual(usage(10));
  });

  it('never starts the tail inside a surrogate pair', () => {
    const h = modelHeartbeat(message(['😀'.repeat(MODEL_HEARTBEAT_TAIL_CHARS) + 'a']), { attempt: 1, seq: 1 });
    expect(h.tail!.length).toBe(MODEL_HEARTBEAT_TAIL_CHARS - 1);
    expect(h.tail!.codePointAt(0)).toBe(0x1f600);
  });

  it('the readers read the 0.3 shape (the whole partial message)', () => {
    const old: ModelHeartbeat = { kind: 'model', partial: message(['Hello ', 'world'], 4), failedUsage: usage(1) };
    expect(streamedText(old)).toEqual({ textLength: 11, tail: 'Hello world' });
    expect(heartbeatUsage(old)).toEqual(usage(5));
    expect(streamedText({ kind: 'model', failedUsage: usage(1) })).toBeUndefined();
  });
});

describe('accountedAttempt heartbeats', () => {
  it('a 200 KB reply heartbeats at most 2.5 KB each, in all linear in the reply, not quadratic', async () => {
    const env = new MockActivityEnvironment({ attempt: 1 });
    const sent: unknown[] = [];
    env.on('heartbeat', (d: unknown) => sent.push(d));
    const chunk = 'lorem ipsum dolor sit amet, '.repeat(74).slice(0, 2048); // 100 chunks of 2 KB: 200 KB
    const texts: string[] = [];
    await env.run(() =>
      accountedAttempt(undefined, async (onPartial) => {
        for (let i = 0; i < 100; i++) {
          texts.push(chunk);
          onPartial(message([texts.join('')], i));
          if (i % 20 === 19) await new Promise((r) => setTimeout(r, 260)); // let a throttled heartbeat out
        }
        return message([texts.join('')], 100);
      }),
    );
    const sizes = sent.map(bytes);
    // one at the first delta, one after each pause
    expect(sent.length).toBeGreaterThanOrEqual(5);
    expect(Math.max(...sizes)).toBeLessThan(2500);
    const last = sent[sent.length - 1] as ModelHeartbeat;
    expect(last.textLength).toBe(last.seq! * 2048);
    expect(last.textLength).toBeGreaterThan(150 * 1024);
    expect(last.tail).toBe(chunk);
    // the 0.3 shape sent the whole partial message each time
    const oldSizes = (sent as ModelHeartbeat[]).map((h) =>
      bytes({ kind: 'model', partial: message([chunk.repeat(h.textLength! / 2048)], 0) }),
    );
    console.log(
      `heartbeats of a 200 KB reply: ${sent.length}, max ${Math.max(...sizes)} B, total ${sizes.reduce((a, b) => a + b)} B` +
        ` (0.3 shape: max ${Math.max(...oldSizes)} B, total ${oldSizes.reduce((a, b) => a + b)} B)`,
    );
  });
});
