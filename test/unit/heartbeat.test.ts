/**
 * `startHeartbeat` (activities/heartbeat.ts): progress counts from the activity's start as from a heartbeat, so an
 * activity that ends within the spacing sends no heartbeat (a fast model call: no RPC), and later progress goes out at
 * once; `initial` details go out at start; the one-second tick keeps a long activity heartbeating.
 */
import type { Context } from '@temporalio/activity';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startHeartbeat } from '../../activities/heartbeat.js';

function fakeContext(): { ctx: Context; sent: unknown[] } {
  const sent: unknown[] = [];
  return { ctx: { heartbeat: (d: unknown) => sent.push(d) } as unknown as Context, sent };
}

describe('startHeartbeat: progress counts from the start', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'performance'] });
    vi.advanceTimersByTime(60_000); // the worker process has run a while before this activity starts
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('an activity whose progress and end come within the spacing sends no heartbeat', () => {
    const { ctx, sent } = fakeContext();
    const hb = startHeartbeat(ctx, undefined, 80);
    vi.advanceTimersByTime(5);
    hb.update('first delta');
    vi.advanceTimersByTime(20);
    hb.update('second delta');
    hb.stop();
    vi.advanceTimersByTime(5_000);
    expect(sent).toEqual([]);
  });

  it('progress within the spacing goes out once it has passed since the start, with the latest details', () => {
    const { ctx, sent } = fakeContext();
    const hb = startHeartbeat(ctx, undefined, 80);
    vi.advanceTimersByTime(10);
    hb.update('a');
    hb.update('b');
    vi.advanceTimersByTime(69);
    expect(sent).toEqual([]);
    vi.advanceTimersByTime(1);
    expect(sent).toEqual(['b']);
    hb.stop();
  });

  it('progress after the spacing goes out at once; details built by a function only when sent', () => {
    const { ctx, sent } = fakeContext();
    const hb = startHeartbeat(ctx, undefined, 80);
    vi.advanceTimersByTime(300);
    const build = vi.fn(() => 'built');
    hb.update(build);
    expect(sent).toEqual(['built']);
    expect(build).toHaveBeenCalledTimes(1);
    hb.stop();
  });

  it('initial details go out at start, and the tick sends the latest every second', () => {
    const { ctx, sent } = fakeContext();
    const hb = startHeartbeat(ctx, 'carried');
    expect(sent).toEqual(['carried']);
    vi.advanceTimersByTime(1_000);
    expect(sent).toEqual(['carried', 'carried']);
    hb.stop();
  });
});
