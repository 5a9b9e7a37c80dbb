/**
 * When the stream reader (client/run-stream/reader.ts) looks at the run again: in step with the model call's
 * heartbeats while one streams, soon while the run is busy, and less and less often while it waits.
 *
 * - A model call that heartbeated: its next heartbeat is due one spacing ({@link STREAM_HEARTBEAT_MS}) after the last
 *   one. The server stamps each heartbeat (`lastHeartbeatTime`, its clock); the least `receipt − stamp` seen during
 *   the call is the two clocks' offset plus the fastest delivery, so the next heartbeat is expected at
 *   `stamp + spacing + offset`, and the reader describes the run a few ms after that: about one `describe` per
 *   heartbeat instead of two or more, and a token waits for the reader no longer than for a fixed poll. A heartbeat
 *   that did not come yet (the model paused, or the worker is late) is looked for again after a fifth of the spacing,
 *   then less often, up to the spacing itself.
 * - A model call scheduled that has not heartbeated, a workflow task pending, or history that grew: the base pause.
 * - Only tools running: from the base pause up to the tools' heartbeat spacing (250 ms).
 * - Nothing pending (the run waits for a message, an approval, a timer or a child): from the base pause, doubling up to
 *   one second.
 */
import type { Pending } from './pending.js';
import { STREAM_HEARTBEAT_MS } from '../../common/stream.js';

/** How long after its expected arrival a heartbeat is looked for (the activity's timer and the RPC jitter). */
const MARGIN_MS = 4;
/** The longest pause while tools run (their heartbeats' spacing), and while the run waits. */
const TOOLS_MAX_MS = 250;
const WAITING_MAX_MS = 1000;

/** What one describe showed, as the cadence reads it. */
export interface Seen {
  pending: Pending;
  /** A workflow task was scheduled or running. */
  task: boolean;
  /** The run's history grew since the describe before. */
  grew: boolean;
  /** When the describe was sent and when its answer came (`Date.now()`). */
  sent: number;
  at: number;
}

export class PollCadence {
  /** The model call whose heartbeats are followed, its last heartbeat's stamp, and the least receipt − stamp. */
  private call: string | undefined;
  private stamp = 0;
  private offset = Infinity;
  /** Describes since the last new heartbeat (a late one is looked for less and less often). */
  private late = 0;
  /** The pause while the run is idle, doubled at each describe that finds it so. */
  private idle: number;

  /** `base`: the pause when nothing better is known; `floor`: the shortest pause ever. */
  constructor(
    private readonly base: number,
    private readonly floor: number,
  ) {
    this.idle = base;
  }

  /** The pause (ms) before the next describe, after one that showed `seen`. */
  next(seen: Seen): number {
    return Math.max(this.floor, this.pause(seen));
  }

  private pause({ pending, task, grew, sent, at }: Seen): number {
    const model = pending.model;
    if (model) {
      this.idle = this.base;
      return model.heartbeatAt === undefined ? this.base : this.inStep(model.key, model.heartbeatAt, sent, at);
    }
    this.call = undefined;
    if (task || grew) return (this.idle = this.base);
    const max = pending.tools.length > 0 || pending.running ? TOOLS_MAX_MS : WAITING_MAX_MS;
    const pause = Math.min(this.idle, max);
    this.idle = Math.min(this.idle * 2, max);
    return pause;
  }

  /**
   * The pause until the next describe reaches the server a few ms after the next heartbeat of call `key` is due
   * (`stamp`: its last one, server clock; the describe is sent one round trip, `at − sent`, before).
   */
  private inStep(key: string, stamp: number, sent: number, at: number): number {
    if (key !== this.call) {
      this.call = key;
      this.offset = Infinity;
      this.stamp = 0;
    }
    this.offset = Math.min(this.offset, at - stamp);
    if (stamp !== this.stamp) {
      this.stamp = stamp;
      this.late = 0;
    } else this.late += 1;
    const due = stamp + this.offset + STREAM_HEARTBEAT_MS + MARGIN_MS - (at - sent) - at;
    if (due > 0 && this.late === 0) return due;
    return Math.min(STREAM_HEARTBEAT_MS, (STREAM_HEARTBEAT_MS / 5) * 2 ** Math.max(0, this.late - 1));
  }
}
