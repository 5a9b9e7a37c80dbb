/** common/stream.ts `StreamOffset`: the offsets' values (resumed readers, the SSE example and Python readers use them). */
import { describe, expect, it } from 'vitest';
import { STREAM_OFFSET_SCALE, StreamOffset } from '../../common/stream.js';

describe('StreamOffset', () => {
  it('durable events, delta items, tool updates and tail blocks keep their numbers', () => {
    expect(STREAM_OFFSET_SCALE).toBe(1_000_000);
    expect(StreamOffset.durable(7).value).toBe(7_000_000);
    expect(StreamOffset.delta(7, 3)!.value).toBe(7_000_003);
    expect(StreamOffset.tool(7, 1)!.value).toBe(7_500_001);
    expect(StreamOffset.tail(7, 2)!.value).toBe(7_999_002);
    expect([StreamOffset.delta(7, 0), StreamOffset.delta(7, 500_000), StreamOffset.tool(7, 499_000)]).toEqual([
      undefined,
      undefined,
      undefined,
    ]);
    expect(StreamOffset.tail(7, 1000)).toBeUndefined();
  });

  it('parse gives the kind, the seq and the index back', () => {
    const parts = (o: number) => {
      const p = StreamOffset.parse(o);
      return [p.kind, p.seq, p.index];
    };
    expect(parts(7_000_000)).toEqual(['durable', 7, 0]);
    expect(parts(7_000_003)).toEqual(['delta', 7, 3]);
    expect(parts(7_500_001)).toEqual(['tool', 7, 1]);
    expect(parts(7_999_002)).toEqual(['tail', 7, 2]);
    expect(parts(-5)).toEqual(['durable', 0, 0]);
    expect(StreamOffset.parse(7_000_003.9).value).toBe(7_000_003);
    expect(StreamOffset.tail(7, 0)!.after(StreamOffset.tool(7, 5)!)).toBe(true);
  });
});
