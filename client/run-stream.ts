/**
 * `AgentRunHandle.stream()`: the run's live event stream (common/stream.ts) read through the Temporal client alone —
 * the durable events from the `events` query, the model's deltas from the pending `callModel` activity's heartbeat
 * (`describe`), tool progress from the tool activities' heartbeats. Nothing here writes to the run or its history.
 *
 * The `events` query costs the worker a workflow task, so it is asked only when the run's history grew since the last
 * read (durable events are only emitted by workflow tasks, which add history events; heartbeats add none).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import type { EventsPage, LoggedEvent, ModelHeartbeat, ToolHeartbeat } from '../common/events.js';
import { eventsQuery } from '../workflows/definitions.js';
import { isUnreachable } from './cli/reconnect.js';
import {
  STREAM_OFFSET_SCALE,
  deltaEvent,
  durableOffset,
  splitOffset,
  type HeartbeatDeltas,
  type StreamEvent,
} from '../common/stream.js';

export interface StreamOptions {
  /** Deliver the events after this offset (the `offset` of the last event you applied); default 0: all still held. */
  from?: number;
  /** Ends the iteration (without an error) when aborted. */
  signal?: AbortSignal;
  /** How often the run is looked at, in ms (default 50). */
  pollMs?: number;
}

interface Pending {
  key: string;
  model?: ModelHeartbeat & { deltas: HeartbeatDeltas };
  tools: ToolHeartbeat[];
}

/** The heartbeats of the run's pending activities; `key` names the pending `callModel` (run and activity id). */
function pendingOf(runId: string, raw: unknown): Pending {
  const out: Pending = { key: '', tools: [] };
  const acts = (raw as { pendingActivities?: unknown[] | null }).pendingActivities ?? [];
  for (const a of acts as {
    activityId?: string | null;
    activityType?: { name?: string | null } | null;
    heartbeatDetails?: { payloads?: unknown[] | null } | null;
  }[]) {
    const payload = a.heartbeatDetails?.payloads?.[0];
    if (!payload) continue;
    let d: ModelHeartbeat | ToolHeartbeat | undefined;
    try {
      d = defaultPayloadConverter.fromPayload(payload as never) as ModelHeartbeat | ToolHeartbeat | undefined;
    } catch {
      continue; // not ours, or not JSON
    }
    if (d?.kind === 'tool') out.tools.push(d);
    else if (d?.kind === 'model' && d.deltas && a.activityType?.name === 'callModel') {
      out.model = d as Pending['model'];
      out.key = `${runId}/${a.activityId ?? ''}`;
    }
  }
  return out;
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
 */
export async function* streamRun(handle: WorkflowHandle, opts: StreamOptions = {}): AsyncGenerator<StreamEvent> {
  const pollMs = opts.pollMs ?? 50;
  let { seq, delta } = splitOffset(opts.from ?? 0);
  /** History length (and run) that the durable events read so far cover. */
  let readAt = '';
  /** The model call whose deltas are numbered after durable event `base.seq`. */
  let base: { key: string; seq: number } | undefined;
  const toolUpdates = new Map<string, string>();

  /**
   * Reads the durable events after `seq` up to those of run `runId` (the one a describe found: named, so a
   * continue-as-new between two queries cannot make them speak of different runs); undefined when no worker answered
   * (try again later).
   */
  const readDurable = async (runId: string): Promise<LoggedEvent[] | undefined> => {
    try {
      // a run holds only its own events: those after `seq` that it no longer holds are read from the runs before it
      const runs: string[] = [runId];
      for (;;) {
        const page = await query(handle, runs[0], seq, 1);
        if (page.firstSeq <= seq + 1) break;
        const before = await previousRun(handle, runs[0]);
        if (!before) break;
        runs.unshift(before);
      }
      const out: LoggedEvent[] = [];
      for (const runId of runs) {
        for (;;) {
          const after = out.at(-1)?.seq ?? seq;
          const page = await query(handle, runId, after, 500);
          out.push(...page.events.filter((e) => e.seq > (out.at(-1)?.seq ?? seq)));
          if (page.events.length < 500) break;
        }
      }
      return out;
    } catch {
      return undefined; // no worker answered in time, the run had not run its first task, or Temporal is away
    }
  };

  for (;;) {
    if (opts.signal?.aborted) return;
    let desc;
    try {
      desc = await handle.describe();
    } catch (err) {
      if (!isUnreachable(err)) throw err;
      await sleep(pollMs * 10, opts.signal);
      continue;
    }
    // a run that continued as new is not the end: the next describe finds its successor
    if (desc.status.name === 'CONTINUED_AS_NEW') {
      await sleep(pollMs, opts.signal);
      continue;
    }
    const closed = desc.status.name !== 'RUNNING';
    const at = `${desc.runId}/${desc.historyLength}`;
    let fresh = true; // the durable events read cover this describe
    if (at !== readAt || closed) {
      const events = await readDurable(desc.runId);
      if (events) {
        readAt = at;
        fresh = events.length === 0;
        for (const e of events) {
          seq = e.seq;
          delta = 0;
          yield { ...e, offset: durableOffset(e.seq) };
        }
      } else fresh = false;
    }
    if (closed) {
      if (readAt === at) return;
      await sleep(pollMs * 10, opts.signal); // the last events need a worker to answer
      continue;
    }
    const pending = pendingOf(desc.runId, desc.raw);
    // a new call is placed after `seq` only when no durable event came after this describe (none is emitted while a
    // call runs, so every reader places it alike)
    if (pending.model && base?.key !== pending.key && fresh) base = { key: pending.key, seq };
    if (pending.model && base?.key === pending.key && base.seq === seq) {
      const d = pending.model.deltas;
      const first = d.end - d.items.length;
      for (const [i, item] of d.items.entries()) {
        const n = first + i + 1;
        if (n <= delta) continue;
        if (n >= STREAM_OFFSET_SCALE) break; // past the numbers of one call: `message_end` carries the rest
        delta = n;
        yield deltaEvent(item, d.messageIndex, durableOffset(seq) + n);
      }
    }
    for (const t of pending.tools) {
      const mark = `${t.updates}`;
      if (toolUpdates.get(t.toolCallId) === mark) continue;
      toolUpdates.set(t.toolCallId, mark);
      yield {
        type: 'tool_execution_update',
        toolCallId: t.toolCallId,
        toolName: t.toolName,
        args: t.args,
        partialResult: t.partialResult,
      };
    }
    await sleep(pollMs, opts.signal);
  }
}
