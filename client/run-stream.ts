/**
 * `AgentRunHandle.stream()`: the run's live event stream (common/stream.ts) read through the Temporal client alone —
 * the durable events from the `events` query, the model's deltas from the pending `callModel` activity's heartbeat
 * (`describe`), tool progress from the tool activities' heartbeats. Nothing here writes to the run or its history.
 *
 * The `events` query costs the worker a workflow task, so it is asked only when the run's history grew since the last
 * read (durable events are only emitted by workflow tasks, which add history events; heartbeats add none). A read runs
 * beside the `describe` polls, not instead of them: one that is slow (a run that continued as new is queried by
 * replaying it on a worker, seen to take 1–2 s) would otherwise let whole model calls start and finish unseen. Their
 * heartbeats are kept meanwhile and sent once the durable events before them are.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { EventsPage, LoggedEvent, ModelHeartbeat, ToolHeartbeat } from '../common/events.js';
import { eventsQuery } from '../workflows/definitions.js';
import { isUnreachable } from './reconnect.js';
import { HeartbeatDetailsDecoder } from './heartbeat-details.js';
import type { AssistantMessage } from '../common/messages.js';
import {
  STREAM_OFFSET_SCALE,
  STREAM_TAIL_BASE,
  STREAM_TOOL_BASE,
  blockText,
  deltaEvent,
  durableOffset,
  splitOffset,
  type DeltaItem,
  type StreamEvent,
} from '../common/stream.js';

export interface StreamOptions {
  /** Deliver the events after this offset (the `offset` of the last event you applied); default 0: all still held. */
  from?: number;
  /** Ends the iteration (without an error) when aborted. */
  signal?: AbortSignal;
  /** How often the run is looked at (`describe`), in ms (default 25: half the model heartbeat's spacing). */
  pollMs?: number;
  /**
   * Runs each `describe` of the run. Default: an unreachable Temporal is retried after a pause, silently and without
   * end; the CLI passes its `throughOutage`, which says "reconnecting…" and gives up after `$KEEL_RECONNECT_TIMEOUT`.
   */
  describe?: <T>(describe: () => Promise<T>) => Promise<T>;
  /**
   * When the run has closed and no worker answers the `events` query for this long (ms), end without its last events
   * (default: wait for a worker; the CLI, which prints the outcome from history anyway, gives it 5 s).
   */
  closedReadTimeoutMs?: number;
}

/** What one `describe` shows: the pending `callModel` (run and activity id, its deltas once it heartbeated), tools. */
interface Pending {
  model?: { key: string; deltas?: ModelHeartbeat['deltas'] };
  tools: ToolHeartbeat[];
}

/** The pending activities of run `runId` as `describe` shows them (their details decoded through `details`). */
async function pendingOf(runId: string, raw: unknown, details: HeartbeatDetailsDecoder): Promise<Pending> {
  const out: Pending = { tools: [] };
  details.poll();
  const acts = (raw as { pendingActivities?: unknown[] | null }).pendingActivities ?? [];
  for (const a of acts as {
    activityId?: string | null;
    activityType?: { name?: string | null } | null;
    heartbeatDetails?: { payloads?: unknown[] | null } | null;
  }[]) {
    const isModel = a.activityType?.name === 'callModel';
    const key = `${runId}/${a.activityId ?? ''}`;
    if (isModel) out.model = { key };
    const payload = a.heartbeatDetails?.payloads?.[0];
    if (!payload) continue;
    let d: ModelHeartbeat | ToolHeartbeat | undefined;
    try {
      d = (await details.decode(key, payload as never)) as ModelHeartbeat | ToolHeartbeat | undefined;
    } catch {
      continue; // not ours, not JSON, or sealed under a key this client does not have
    }
    if (d?.kind === 'tool') out.tools.push(d);
    else if (d?.kind === 'model' && d.deltas && isModel) out.model!.deltas = d.deltas;
  }
  return out;
}

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

/** A read of the durable events, running beside the polls. */
interface Read {
  runId: string;
  /** The describe (`runId/historyLength`) it was started after. */
  at: string;
  /** The last poll finished when the last page of `runId` was asked, and the last poll started when it was answered. */
  queryTick: number;
  doneTick: number;
  done: boolean;
  events?: LoggedEvent[];
  /** The last durable event of `runId` when it was asked. */
  lastSeq: number;
  promise: Promise<void>;
}

/** The `events` page of run `runId`, bounded by a deadline (no worker may be polling). */
function query(handle: WorkflowHandle, runId: string, after: number, limit: number): Promise<EventsPage> {
  const h = handle.client.getHandle(handle.workflowId, runId);
  return handle.client.connection.withDeadline(Date.now() + 5000, () => h.query(eventsQuery, { after, limit }));
}

/** The run that `runId` continued as new from, from its first history event. */
async function previousRun(handle: WorkflowHandle, runId: string): Promise<string | undefined> {
  const res = await handle.client.workflowService.getWorkflowExecutionHistory({
    namespace: handle.client.options.namespace,
    execution: { workflowId: handle.workflowId, runId },
    maximumPageSize: 1,
  });
  return res.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
}

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

/**
 * The stream of `handle`'s run from `opts.from`: each event once, in order, with increasing offsets (tool updates
 * aside, which carry none). Reconnects by itself: a Temporal outage or a moment without a worker to answer the query
 * only delays events. Ends when the run (the last of its continue-as-new chain) has closed and its last events were
 * read, or when `signal` aborts.
 *
 * Placing a model call. Its deltas follow the last durable event emitted before it started, and none is emitted while
 * it runs. So a call that a poll showed pending before the last page of an `events` read was asked, and a poll
 * started after the answer came still showed pending, ran throughout that read: it follows the read's last event.
 * A call seen only while a read was in flight goes right before its message's `message_start` (its `messageIndex`).
 */
export async function* streamRun(handle: WorkflowHandle, opts: StreamOptions = {}): AsyncGenerator<StreamEvent> {
  const pollMs = opts.pollMs ?? 25;
  let { seq, delta } = splitOffset(opts.from ?? 0);
  /**
   * What the consumer holds of the blocks of the call after `seq` (undefined: unknown, it resumed in the middle of
   * one), from which the call's tail is computed.
   */
  let held: string[] | undefined = delta === 0 ? [] : undefined;
  const calls = new Map<string, Call>();
  /** The `updates` count of each tool's last update sent. */
  const toolUpdates = new Map<string, number>();
  /** Polls started and finished (numbered from 1). */
  let tick = 0;
  let finished = 0;
  /** The read in flight, and the `at` of the last completed one (the history its events cover). */
  let read: Read | undefined;
  let readAt = '';

  /** Reads the durable events after `after` up to those of run `runId`, and the runs before it that still hold some. */
  const startRead = (runId: string, at: string, after: number): Read => {
    const r = { runId, at, queryTick: finished, doneTick: 0, done: false, lastSeq: after } as Read;
    r.promise = (async () => {
      try {
        const runs: string[] = [runId];
        for (;;) {
          const page = await query(handle, runs[0], after, 1);
          if (page.firstSeq <= after + 1) break;
          const before = await previousRun(handle, runs[0]);
          if (!before) break;
          runs.unshift(before);
        }
        const out: LoggedEvent[] = [];
        for (const id of runs) {
          for (;;) {
            const last = out.at(-1)?.seq ?? after;
            if (id === runId) r.queryTick = finished;
            const page = await query(handle, id, last, 500);
            out.push(...page.events.filter((e) => e.seq > (out.at(-1)?.seq ?? after)));
            if (page.events.length < 500) break;
          }
        }
        r.events = out;
        r.lastSeq = out.at(-1)?.seq ?? after;
      } catch {
        // no worker answered in time, the run had not run its first task, or Temporal is away: asked again later
      } finally {
        r.done = true;
        r.doneTick = tick;
      }
    })();
    return r;
  };

  /** The position as an offset. */
  const position = () => durableOffset(seq) + delta;

  /** Sends what is held of the call after `seq`, from the next number on (a gap waits for the tail, a reset skips it). */
  function* drain(): Generator<StreamEvent> {
    const c = [...calls.values()].find((c) => c.base === seq);
    if (!c || c.messageIndex === undefined) return;
    for (;;) {
      let n = delta + 1;
      if (!c.items.has(n)) {
        // the items before the oldest held one left the heartbeat's window unseen: only a reset (which clears the
        // message) can follow such a gap without garbling it; else the tail completes the message
        const reset = [...c.items.entries()].filter(([k, it]) => k > n && it.t === 'reset').map(([k]) => k);
        if (reset.length === 0) return;
        n = Math.min(...reset);
      }
      if (n >= STREAM_TOOL_BASE) return; // past a call's numbers: its tail completes it
      const item = c.items.get(n)!;
      c.items.delete(n);
      if (item.t === 'reset') held = [];
      else if (held) held[item.b] = item.r ? item.d : (held[item.b] ?? '') + item.d;
      delta = n;
      yield deltaEvent(item, c.messageIndex, position());
    }
  }

  /** Before an assistant message's `message_start`: what the consumer lacks of each final block. */
  function* tail(message: AssistantMessage, messageIndex: number): Generator<StreamEvent> {
    for (const [b, block] of message.content.entries()) {
      const n = STREAM_TAIL_BASE + b;
      if (n <= delta || n >= STREAM_OFFSET_SCALE) continue;
      const text = blockText(block);
      const had = held?.[b] ?? (held ? '' : undefined);
      delta = n;
      if (had === text) continue;
      const tool = block.type === 'toolCall' ? { id: block.id, name: block.name } : {};
      const item: DeltaItem =
        had !== undefined && text.startsWith(had)
          ? { t: 'delta', b, k: block.type, d: text.slice(had.length), ...tool }
          : { t: 'delta', b, k: block.type, d: text, r: true, ...tool };
      yield deltaEvent(item, messageIndex, position());
    }
  }

  /** The durable events of a completed read, each preceded by what is held of the call before it. */
  function* durable(events: LoggedEvent[]): Generator<StreamEvent> {
    for (const e of events) {
      if (e.type === 'message_start' && e.message.role === 'assistant' && e.messageIndex !== undefined) {
        // a call that began and ended while a read was slow: what the polls kept of it goes before its message
        const c = [...calls.values()].findLast((c) => c.messageIndex === e.messageIndex && c.base === undefined);
        if (c && ![...calls.values()].some((o) => o.base === seq)) c.base = seq;
      }
      yield* drain();
      if (e.type === 'message_start' && e.message.role === 'assistant') {
        const index = e.messageIndex ?? [...calls.values()].find((c) => c.base === seq)?.messageIndex;
        if (index !== undefined) yield* tail(e.message, index);
      }
      if ((e.type === 'message_start' || e.type === 'message_end') && e.messageIndex !== undefined)
        sentIndex = Math.max(sentIndex, e.messageIndex);
      seq = e.seq;
      delta = 0;
      held = [];
      yield { ...e, offset: durableOffset(e.seq) };
    }
  }

  let last: Read | undefined;
  /** The heartbeat details of the last polls, decoded (the unchanged ones are not parsed again). */
  const details = new HeartbeatDetailsDecoder(handle.client.options.loadedDataConverter);
  /** The highest transcript index of the messages sent. */
  let sentIndex = -1;
  /** When a describe first found the run closed. */
  let closedSince: number | undefined;
  for (;;) {
    if (opts.signal?.aborted) return;
    let desc;
    const mine = ++tick;
    try {
      desc = await (opts.describe ? opts.describe(() => handle.describe()) : handle.describe());
    } catch (err) {
      if (opts.describe || !isUnreachable(err)) throw err;
      await sleep(pollMs * 10, opts.signal);
      continue;
    }
    finished = mine;
    // a run that continued as new is not the end: the next describe finds its successor
    if (desc.status.name === 'CONTINUED_AS_NEW') {
      await sleep(pollMs, opts.signal);
      continue;
    }
    const closed = desc.status.name !== 'RUNNING';
    const at = `${desc.runId}/${desc.historyLength}`;
    const pending = closed ? { tools: [] } : await pendingOf(desc.runId, desc.raw, details);
    if (pending.model) {
      const { key, deltas } = pending.model;
      let c = calls.get(key);
      if (!c) calls.set(key, (c = { runId: desc.runId, first: mine, last: mine, items: new Map() }));
      c.last = mine;
      if (deltas) {
        c.messageIndex = deltas.messageIndex;
        const first = deltas.end - deltas.items.length;
        const past = c.base === seq ? delta : 0;
        deltas.items.forEach((item, i) => {
          if (first + i + 1 > past) c.items.set(first + i + 1, item);
        });
      }
    }
    if (closed) closedSince ??= Date.now();
    // tool updates, when every durable event before this describe was sent (the tool's start was, its end was not;
    // no model call runs beside a tool, and a delta of the call before it not sent yet is left to its tail)
    if (!read && at === readAt) {
      for (const t of pending.tools) {
        if (toolUpdates.get(t.toolCallId) === t.updates || delta + 1 >= STREAM_TAIL_BASE) continue;
        toolUpdates.set(t.toolCallId, t.updates);
        delta = Math.max(delta, STREAM_TOOL_BASE) + 1;
        yield {
          type: 'tool_execution_update',
          toolCallId: t.toolCallId,
          toolName: t.toolName,
          args: t.args,
          partialResult: t.partialResult,
          updates: t.updates,
          offset: position(),
        };
      }
    }
    if (read?.done) {
      if (!read.events && closed && Date.now() - closedSince! >= (opts.closedReadTimeoutMs ?? Infinity)) return;
      if (read.events) {
        readAt = read.at;
        last = read;
        yield* durable(read.events);
      }
      read = undefined;
    }
    // place the calls that ran throughout the last read; forget those that can no longer be sent
    for (const [key, c] of calls) {
      if (c.base === undefined && last && c.runId === last.runId && c.first <= last.queryTick && c.last > last.doneTick)
        c.base = last.lastSeq;
      const gone =
        c.last < mine &&
        (c.base !== undefined
          ? c.base < seq
          : c.messageIndex !== undefined
            ? c.messageIndex <= sentIndex
            : last !== undefined && last.doneTick >= c.last);
      if (gone) calls.delete(key);
    }
    yield* drain();
    if (!read && at !== readAt) read = startRead(desc.runId, at, seq);
    if (closed && !read && readAt === at) return;
    // the next poll, or sooner when the read in flight is answered
    await (read ? Promise.race([sleep(pollMs, opts.signal), read.promise]) : sleep(pollMs, opts.signal));
  }
}
