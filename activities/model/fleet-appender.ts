/**
 * A model call's delta log on the fleet stream transport (docs/live-output.md#fleet-transport): the attempt's
 * {@link DeltaRecorder} (whose window also goes in the heartbeat, the default transport and the fallback), and, on a
 * worker configured with a stream store, its items appended to the run's Redis stream as they come — the first at
 * once, the next ones at most {@link FLUSH_MS} apart, the rest with the end marker when the attempt completes.
 */
import type { Context } from '@temporalio/activity';
import type { ModelHeartbeat } from '../../common/events.js';
import { DeltaRecorder } from '../../common/stream.js';
import type { DeltaBatch } from '../../node-common/fleet-stream/entries.js';
import type { FleetStreamStore } from '../../node-common/fleet-stream/store.js';

/** The longest a delta waits for the next append (appends are batched no closer than this). */
const FLUSH_MS = 10;

/** Appends one attempt's delta items to the store (best-effort: the store's appends never throw). */
export class FleetAppender {
  private sent: number;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private lastFlush = 0;
  /** The appends in order (sealing a batch is asynchronous). */
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: FleetStreamStore,
    private readonly workflowId: string,
    private readonly call: Pick<DeltaBatch, 'runId' | 'messageIndex' | 'attempt'>,
    private readonly recorder: DeltaRecorder,
    /** The number the attempt's items go on from (its first item, a retry's reset, is the one after). */
    start: number,
  ) {
    this.sent = start;
  }

  /** The recorder took a snapshot: append its new items now, or once {@link FLUSH_MS} passed since the last append. */
  onSnapshot(): void {
    if (this.timer) return;
    const wait = FLUSH_MS - (performance.now() - this.lastFlush);
    if (wait <= 0) this.flush(false);
    else
      this.timer = setTimeout(() => {
        this.timer = undefined;
        this.flush(false);
      }, wait);
  }

  /** The attempt settled: append what is left (`completed`: with the end marker). */
  close(completed: boolean): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.flush(completed);
  }

  private flush(end: boolean): void {
    this.lastFlush = performance.now();
    const { first, items } = this.recorder.itemsAfter(this.sent);
    if (items.length === 0 && !end) return;
    if (items.length > 0) this.sent = first + items.length - 1;
    const batch: DeltaBatch = { ...this.call, first: items.length > 0 ? first : this.sent + 1, items };
    const sent = end ? { ...batch, end: true as const } : batch;
    this.chain = this.chain.then(() => this.store.append(this.workflowId, sent));
  }
}

/** Where an earlier attempt's delta log for `messageIndex` ended (its last heartbeat), else 0. */
function deltasEnd(details: unknown, messageIndex: number): number {
  const d = (details as ModelHeartbeat | undefined)?.deltas;
  return d && d.messageIndex === messageIndex && Number.isInteger(d.end) ? d.end : 0;
}

/**
 * The delta log of the attempt running in `ctx` of the call that streams transcript message `messageIndex`: numbered
 * on from what the earlier attempts reached (their last heartbeat, or what the store holds of them when that is
 * further: no number is given twice), with its appender when the worker has a stream store (not for a retry whose
 * store does not say where its numbering ended).
 */
export async function openDeltaLog(
  ctx: Context,
  stream: { messageIndex: number; fleet?: FleetStreamStore },
): Promise<{ recorder: DeltaRecorder; appender?: FleetAppender }> {
  const { attempt, heartbeatDetails, workflowExecution } = ctx.info;
  let start = deltasEnd(heartbeatDetails, stream.messageIndex);
  const { workflowId = '', runId = '' } = workflowExecution ?? {};
  const stored =
    stream.fleet && attempt > 1 ? await stream.fleet.lastNumber(workflowId, runId, stream.messageIndex) : 0;
  start = Math.max(start, stored ?? 0);
  const recorder = new DeltaRecorder(stream.messageIndex, start, attempt);
  // a retry that cannot learn the store's numbering appends nothing: a number given twice would garble readers
  if (!stream.fleet || !workflowId || stored === undefined) return { recorder };
  const call = { runId, messageIndex: stream.messageIndex, attempt };
  return { recorder, appender: new FleetAppender(stream.fleet, workflowId, call, recorder, start) };
}
