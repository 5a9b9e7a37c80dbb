/**
 * The reader behind `AgentRunHandle.stream()` (client/run-stream.ts): polls `describe`, reads the durable events beside
 * the polls, and sends each event once, in order, at its offset (common/stream.ts `StreamOffset`).
 *
 * Placing a model call. Its deltas follow the last durable event emitted before it started, and none is emitted while
 * it runs. So a call that a poll showed pending before the last page of an `events` read was asked, and a poll
 * started after the answer came still showed pending, ran throughout that read: it follows the read's last event.
 * A call seen only while a read was in flight goes right before its message's `message_start` (its `messageIndex`).
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { LoggedEvent, ToolHeartbeat } from '../../common/events.js';
import type { AssistantMessage } from '../../common/messages.js';
import { StreamOffset, type DeltaItem, type HeartbeatDeltas, type StreamEvent } from '../../common/stream.js';
import { HeartbeatDetailsDecoder } from '../heartbeat-details.js';
import { isUnreachable } from '../reconnect.js';
import type { StreamOptions } from '../run-stream.js';
import { PollCadence } from './cadence.js';
import { describeRun } from './describe.js';
import { DurableRead, type PollCount } from './durable-read.js';
import { pendingOf, type Pending } from './pending.js';
import { StreamPosition } from './position.js';

/** A model call as the polls saw it: the delta items its heartbeats carried, and where it goes once that is known. */
interface Call {
  runId: string;
  messageIndex?: number;
  /** The first and last poll (by number) that showed it pending. */
  first: number;
  last: number;
  /** Items seen and not yet sent, by number. */
  items: Map<number, DeltaItem>;
  /** The durable event it follows, once known. */
  base?: number;
}

/** What one `describe` showed (undefined: none this time, poll again). */
interface Poll {
  /** Its number. */
  tick: number;
  runId: string;
  /** `runId/historyLength`: the history the durable events read after it must cover. */
  at: string;
  closed: boolean;
  pending: Pending;
  /** A workflow task was scheduled or running. */
  task: boolean;
  /** The pause before the next describe (client/run-stream/cadence.ts). */
  pause: number;
}

/** The shortest pause between two describes (unless `pollMs` says otherwise). */
const MIN_PAUSE_MS = 5;

/** The longest a read of new durable events waits for a pending workflow task to complete. */
const READ_WAIT_MS = 500;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
  });

export class RunStreamReader {
  /** The last offset sent and what the consumer holds of the call after it (position.ts). */
  private readonly pos: StreamPosition;
  private readonly calls = new Map<string, Call>();
  /** The `updates` count of each tool's last update sent. */
  private readonly toolUpdates = new Map<string, number>();
  private readonly polls: PollCount = { started: 0, finished: 0 };
  /** The read in flight, the last completed one, and the history (`runId/historyLength`) whose events were sent. */
  private read: DurableRead | undefined;
  private lastRead: DurableRead | undefined;
  private readAt = '';
  /** The heartbeat details of the last polls, decoded (the unchanged ones are not parsed again). */
  private readonly details: HeartbeatDetailsDecoder;
  /** The highest transcript index of the messages sent. */
  private sentIndex = -1;
  /** When a describe first found the run closed. */
  private closedSince: number | undefined;
  private readonly pollMs: number;
  private readonly cadence: PollCadence;
  /** The history (`runId/historyLength`) the last describe showed. */
  private lastAt = '';
  /** Since when a read waits for a pending workflow task (see `readDue`). */
  private taskSince: number | undefined;

  constructor(
    private readonly handle: WorkflowHandle,
    private readonly opts: StreamOptions = {},
  ) {
    this.pollMs = opts.pollMs ?? 25;
    this.cadence = new PollCadence(this.pollMs, opts.pollMs ?? MIN_PAUSE_MS);
    this.pos = new StreamPosition(opts.from ?? 0);
    this.details = new HeartbeatDetailsDecoder(handle.client.options.loadedDataConverter);
  }

  /** The stream (see `streamRun`). */
  async *events(): AsyncGenerator<StreamEvent> {
    for (;;) {
      if (this.opts.signal?.aborted) return;
      const poll = await this.poll();
      if (!poll) continue;
      this.notePending(poll);
      yield* this.emitToolUpdates(poll);
      if (this.read?.done) {
        if (this.readTimedOut(poll)) return;
        yield* this.emitRead();
      }
      this.forgetCalls(poll.tick);
      yield* this.emitDeltas();
      if (!this.read && poll.at !== this.readAt && this.readDue(poll)) this.read = this.startRead(poll);
      if (poll.closed && !this.read && this.readAt === poll.at) return;
      // the next poll, or sooner when the read in flight is answered
      const next = sleep(poll.pause, this.opts.signal);
      await (this.read ? Promise.race([next, this.read.promise]) : next);
    }
  }

  /** One `describe` of the run (undefined after a pause: Temporal unreachable, or a run that continued as new). */
  private async poll(): Promise<Poll | undefined> {
    const { describe } = this.opts;
    const tick = ++this.polls.started;
    const sent = Date.now();
    let desc;
    try {
      desc = await (describe ? describe(() => describeRun(this.handle)) : describeRun(this.handle));
    } catch (err) {
      if (describe || !isUnreachable(err)) throw err;
      await sleep(this.pollMs * 10, this.opts.signal);
      return undefined;
    }
    this.polls.finished = tick;
    // a run that continued as new is not the end: the next describe finds its successor
    if (desc.status === 'CONTINUED_AS_NEW') {
      await sleep(this.pollMs, this.opts.signal);
      return undefined;
    }
    const closed = desc.status !== 'RUNNING';
    if (closed) this.closedSince ??= Date.now();
    const pending = closed ? { tools: [] } : await pendingOf(desc.runId, desc.raw, this.details);
    const at = `${desc.runId}/${desc.historyLength}`;
    const task = !!desc.raw.pendingWorkflowTask;
    const pause = this.cadence.next({ pending, task, grew: at !== this.lastAt, sent, at: Date.now() });
    this.lastAt = at;
    return { tick, runId: desc.runId, at, closed, pending, task, pause };
  }

  /**
   * Whether to read the durable events the history grew by now: not while a workflow task is pending (it emits more
   * of them, and one read after it costs the worker one query instead of two), unless one stays pending for
   * {@link READ_WAIT_MS} (a task that keeps failing must not hold back the events before it).
   */
  private readDue(poll: Poll): boolean {
    if (!poll.task) return true;
    this.taskSince ??= Date.now();
    return Date.now() - this.taskSince >= READ_WAIT_MS;
  }

  private startRead(poll: Poll): DurableRead {
    this.taskSince = undefined;
    const sameRun = this.lastRead?.runId === poll.runId;
    return new DurableRead(this.handle, poll.runId, poll.at, this.pos.at.seq, this.polls, sameRun);
  }

  /** Keeps what the poll showed of the pending model call: that it runs, and its delta items not sent yet. */
  private notePending({ pending, runId, tick }: Poll): void {
    if (!pending.model) return;
    const { key, deltas } = pending.model;
    let c = this.calls.get(key);
    if (!c) this.calls.set(key, (c = { runId, first: tick, last: tick, items: new Map() }));
    c.last = tick;
    if (deltas) this.keepItems(c, deltas);
  }

  private keepItems(c: Call, deltas: HeartbeatDeltas): void {
    c.messageIndex = deltas.messageIndex;
    const first = deltas.end - deltas.items.length;
    const past = c.base === this.pos.at.seq ? this.deltasPassed() : 0;
    deltas.items.forEach((item, i) => {
      if (first + i + 1 > past) c.items.set(first + i + 1, item);
    });
  }

  /** The delta numbers after `at.seq` already passed: all of them once a tool update or a tail was sent. */
  private deltasPassed(): number {
    const kind = this.pos.at.kind;
    return kind === 'durable' ? 0 : kind === 'delta' ? this.pos.at.index : Infinity;
  }

  /**
   * Tool updates, when every durable event before this describe was sent (the tool's start was, its end was not; no
   * model call runs beside a tool, and a delta of the call before it not sent yet is left to its tail).
   */
  private *emitToolUpdates(poll: Poll): Generator<StreamEvent> {
    if (this.read || poll.at !== this.readAt) return;
    for (const t of poll.pending.tools) {
      if (this.toolUpdates.get(t.toolCallId) === t.updates) continue;
      const next = this.nextToolOffset();
      if (!next) continue;
      this.toolUpdates.set(t.toolCallId, t.updates);
      this.pos.at = next;
      yield { ...toolUpdate(t), offset: next.value };
    }
  }

  private nextToolOffset(): StreamOffset | undefined {
    const { kind, seq, index } = this.pos.at;
    if (kind === 'tail') return undefined;
    return StreamOffset.tool(seq, kind === 'tool' ? index + 1 : 1);
  }

  /** Whether to end without the last events: the run closed and no worker answered the read for too long. */
  private readTimedOut(poll: Poll): boolean {
    const timeout = this.opts.closedReadTimeoutMs ?? Infinity;
    return !this.read!.events && poll.closed && Date.now() - this.closedSince! >= timeout;
  }

  /** The events of the completed read (none when it failed: it is asked again). */
  private *emitRead(): Generator<StreamEvent> {
    const read = this.read!;
    this.read = undefined;
    if (!read.events) return;
    this.readAt = read.at;
    this.lastRead = read;
    yield* this.emitDurable(read.events);
  }

  /** Places the calls that ran throughout the last read; forgets those that can no longer be sent. */
  private forgetCalls(tick: number): void {
    const last = this.lastRead;
    for (const [key, c] of this.calls) {
      if (c.base === undefined && last && c.runId === last.runId && c.first <= last.queryTick && c.last > last.doneTick)
        c.base = last.lastSeq;
      const gone =
        c.last < tick &&
        (c.base !== undefined
          ? c.base < this.pos.at.seq
          : c.messageIndex !== undefined
            ? c.messageIndex <= this.sentIndex
            : last !== undefined && last.doneTick >= c.last);
      if (gone) this.calls.delete(key);
    }
  }

  /** The call placed after durable event `at.seq`, if any. */
  private callHere(): Call | undefined {
    return [...this.calls.values()].find((c) => c.base === this.pos.at.seq);
  }

  /** Sends what is held of the call after `at.seq` (position.ts). */
  private *emitDeltas(): Generator<StreamEvent> {
    const c = this.callHere();
    if (c && c.messageIndex !== undefined) yield* this.pos.deltas(c.items, c.messageIndex);
  }

  /** Durable events, each preceded by what is held of the call before it. */
  private *emitDurable(events: LoggedEvent[]): Generator<StreamEvent> {
    for (const e of events) {
      const start = e.type === 'message_start' && e.message.role === 'assistant' ? e : undefined;
      if (start?.messageIndex !== undefined) this.placeSlowCall(start.messageIndex);
      yield* this.emitDeltas();
      const index = start && (start.messageIndex ?? this.callHere()?.messageIndex);
      if (start && index !== undefined) yield* this.pos.tail(start.message as AssistantMessage, index);
      if ((e.type === 'message_start' || e.type === 'message_end') && e.messageIndex !== undefined)
        this.sentIndex = Math.max(this.sentIndex, e.messageIndex);
      this.pos.durable(e.seq);
      yield { ...e, offset: this.pos.at.value };
    }
  }

  /** A call that began and ended while a read was slow: what the polls kept of it goes before its message. */
  private placeSlowCall(messageIndex: number): void {
    const c = [...this.calls.values()].findLast((c) => c.messageIndex === messageIndex && c.base === undefined);
    if (c && !this.callHere()) c.base = this.pos.at.seq;
  }
}

/** A tool heartbeat as a stream event (its offset aside). */
function toolUpdate(t: ToolHeartbeat) {
  return {
    type: 'tool_execution_update' as const,
    toolCallId: t.toolCallId,
    toolName: t.toolName,
    args: t.args,
    partialResult: t.partialResult,
    updates: t.updates,
  };
}
