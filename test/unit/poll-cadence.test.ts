/** The stream reader's describe cadence (client/run-stream/cadence.ts). */
import { describe, expect, it } from 'vitest';
import { PollCadence } from '../../client/run-stream/cadence.js';
import type { Pending } from '../../client/run-stream/pending.js';
import { STREAM_HEARTBEAT_MS as H } from '../../common/stream.js';

const seen = (pending: Pending, at: number, extra: { task?: boolean; grew?: boolean; rtt?: number } = {}) => ({
  pending,
  task: extra.task ?? false,
  grew: extra.grew ?? false,
  sent: at - (extra.rtt ?? 0),
  at,
});
const model = (heartbeatAt?: number, key = 'run/1'): Pending => ({ model: { key, heartbeatAt }, tools: [] });

describe('PollCadence', () => {
  it('describes once per heartbeat, a few ms after the next one is due', () => {
    const c = new PollCadence(25, 5);
    // the server stamped the heartbeat at 1000 (its clock); the answer came at 1010 (ours): offset ≤ 10
    expect(c.next(seen(model(1000), 1010))).toBe(H + 4);
    // the next heartbeat, seen 14 ms after its stamp: the next describe is due 10 + 4 ms after the next stamp
    expect(c.next(seen(model(1000 + H), 1014 + H))).toBe(H);
    // a describe that took 3 ms is sent 3 ms earlier
    expect(c.next(seen(model(1000 + 2 * H), 1010 + 2 * H, { rtt: 3 }))).toBe(H + 4 - 3);
    // another call: its own offset
    expect(c.next(seen(model(5000, 'run/2'), 5020))).toBe(H + 4);
  });

  it('looks for a late heartbeat again soon, then less often, up to the spacing', () => {
    const c = new PollCadence(25, 5);
    c.next(seen(model(1000), 1005));
    const pauses = [1, 2, 3, 4, 5].map((i) => c.next(seen(model(1000), 1005 + H + 10 * i)));
    expect(pauses).toEqual([H / 5, (2 * H) / 5, (4 * H) / 5, H, H]);
  });

  it('a model call that has not heartbeated, a workflow task or a grown history: the base pause', () => {
    const c = new PollCadence(25, 5);
    expect(c.next(seen(model(undefined), 0))).toBe(25);
    expect(c.next(seen({ tools: [] }, 0, { task: true }))).toBe(25);
    expect(c.next(seen({ tools: [] }, 0, { grew: true }))).toBe(25);
  });

  it('backs off while the run waits (up to 1 s) or only tools run (up to 250 ms), and comes back at once', () => {
    const c = new PollCadence(25, 5);
    const waiting = Array.from({ length: 8 }, () => c.next(seen({ tools: [] }, 0)));
    expect(waiting).toEqual([25, 50, 100, 200, 400, 800, 1000, 1000]);
    expect(c.next(seen({ tools: [] }, 0, { grew: true }))).toBe(25);
    const tools = Array.from({ length: 6 }, () => c.next(seen({ tools: [], running: true }, 0)));
    expect(tools).toEqual([25, 50, 100, 200, 250, 250]);
    expect(c.next(seen(model(undefined), 0))).toBe(25);
  });

  it('never pauses less than the floor', () => {
    const c = new PollCadence(25, 20);
    c.next(seen(model(1000), 1005));
    expect(c.next(seen(model(1000), 1005 + H + 1))).toBe(20);
  });
});
