/**
 * History measurements from `fetchHistory()`: a workflow id's whole continue-as-new chain, its size per turn (both the
 * serialized protobuf size of every event and the sum of payload `data` bytes), and a time breakdown of workflow tasks
 * versus activities from event timestamps.
 */
import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import protoModule from '@temporalio/proto';

const pb = protoModule.temporal;

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const EventType = pb.api.enums.v1.EventType;

export interface Chain {
  /** Events of every run, oldest run first. */
  events: HistoryEvent[];
  runs: number;
  /** Index in `events` where each run starts. */
  runStarts: number[];
}

/** All runs of a workflow id's continue-as-new chain, walking back from the latest run. */
export async function fetchChain(client: Client, workflowId: string): Promise<Chain> {
  let runId: string | undefined = (await client.workflow.getHandle(workflowId).describe()).runId;
  const runs: HistoryEvent[][] = [];
  while (runId) {
    const history: temporal.api.history.v1.IHistory = await client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events: HistoryEvent[] = history.events ?? [];
    runs.unshift(events);
    runId = events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId ?? undefined;
  }
  const runStarts: number[] = [];
  const events: HistoryEvent[] = [];
  for (const r of runs) {
    runStarts.push(events.length);
    events.push(...r);
  }
  return { events, runs: runs.length, runStarts };
}

/** Serialized size of one event (protobuf encoding, as the server stores and counts it). */
export function eventBytes(e: HistoryEvent): number {
  return pb.api.history.v1.HistoryEvent.encode(e).finish().length;
}

/** Sum of the `data` bytes of every payload inside one event. */
export function payloadBytes(e: unknown): number {
  let n = 0;
  const walk = (v: unknown, depth: number) => {
    if (!v || typeof v !== 'object' || depth > 12) return;
    if (v instanceof Uint8Array) return;
    const o = v as Record<string, unknown>;
    if (o.data instanceof Uint8Array && 'metadata' in o) {
      n += o.data.length;
      return;
    }
    for (const k of Object.keys(o)) walk(o[k], depth + 1);
  };
  walk(e, 0);
  return n;
}

export function activityName(e: HistoryEvent): string | undefined {
  return e.activityTaskScheduledEventAttributes?.activityType?.name ?? undefined;
}

export interface TurnPoint {
  turn: number;
  /** Cumulative over the chain up to the end of this turn. */
  events: number;
  bytes: number;
  payloadBytes: number;
  /** Continue-as-new runs started so far. */
  continuedAsNew: number;
  /** Per turn, averaged over the last `window` turns ending at this one. */
  bytesPerTurn: number;
  eventsPerTurn: number;
  /** Cumulative bytes / turn. */
  avgBytesPerTurn: number;
}

/**
 * Turn N ends just before the (N+1)-th model activity is scheduled (so it includes the workflow task that recorded
 * the tool result and any search-attribute upsert), or at the end of the chain for the last turn.
 */
export function turnPoints(
  chain: Chain,
  modelActivity: string,
  turns: number[],
  window = 10,
): { points: TurnPoint[]; turnsSeen: number } {
  const cumBytes: number[] = [0];
  const cumPayload: number[] = [0];
  for (const e of chain.events) {
    cumBytes.push(cumBytes[cumBytes.length - 1] + eventBytes(e));
    cumPayload.push(cumPayload[cumPayload.length - 1] + payloadBytes(e));
  }
  const modelStarts = chain.events.flatMap((e, i) =>
    e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && activityName(e) === modelActivity ? [i] : [],
  );
  const endOf = (turn: number) =>
    turn === 0 ? 0 : turn < modelStarts.length ? modelStarts[turn] : chain.events.length;
  const points: TurnPoint[] = [];
  for (const turn of turns) {
    if (turn > modelStarts.length) continue;
    const end = endOf(turn);
    const from = endOf(Math.max(0, turn - window));
    const span = turn - Math.max(0, turn - window);
    points.push({
      turn,
      events: end,
      bytes: cumBytes[end],
      payloadBytes: cumPayload[end],
      continuedAsNew: chain.runStarts.filter((s) => s < end).length - 1,
      bytesPerTurn: (cumBytes[end] - cumBytes[from]) / span,
      eventsPerTurn: (end - from) / span,
      avgBytesPerTurn: cumBytes[end] / turn,
    });
  }
  return { points, turnsSeen: modelStarts.length };
}

/** The first workflow task whose start carried Temporal's continue-as-new suggestion: its turn and the history size then. */
export function firstSuggestion(
  chain: Chain,
  modelActivity: string,
): { turn: number; historyBytes: number } | undefined {
  let turn = 0;
  for (const e of chain.events) {
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && activityName(e) === modelActivity) turn += 1;
    const a = e.workflowTaskStartedEventAttributes;
    if (a?.suggestContinueAsNew) return { turn, historyBytes: Number(a.historySizeBytes ?? 0) };
  }
  return undefined;
}

/** Serialized bytes per turn by event type (activity events split by activity name), over turns (from, to]. */
export function bytesByEventType(
  chain: Chain,
  modelActivity: string,
  from: number,
  to: number,
): Record<string, number> {
  const modelStarts = chain.events.flatMap((e, i) =>
    e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && activityName(e) === modelActivity ? [i] : [],
  );
  const endOf = (turn: number) => (turn < modelStarts.length ? modelStarts[turn] : chain.events.length);
  const names = new Map<string, string>();
  for (const e of chain.events)
    if (e.activityTaskScheduledEventAttributes) names.set(String(e.eventId), activityName(e) ?? '?');
  const out: Record<string, number> = {};
  for (let i = endOf(from); i < endOf(to); i++) {
    const e = chain.events[i];
    const a = e.activityTaskCompletedEventAttributes ?? e.activityTaskStartedEventAttributes;
    const activity = e.activityTaskScheduledEventAttributes
      ? activityName(e)
      : a
        ? names.get(String(a.scheduledEventId))
        : undefined;
    const type = `${EventType[e.eventType ?? 0]?.replace('EVENT_TYPE_', '') ?? e.eventType}${activity ? ` (${activity})` : ''}`;
    out[type] = (out[type] ?? 0) + eventBytes(e) / (to - from);
  }
  return out;
}

function ms(t: temporal.api.history.v1.IHistoryEvent['eventTime']): number {
  if (!t) return NaN;
  return Number(t.seconds ?? 0) * 1000 + (t.nanos ?? 0) / 1e6;
}

export interface TimeBreakdown {
  wallMs: number;
  workflowTasks: number;
  /** Workflow task scheduled → started (queue, sticky dispatch). */
  wftQueueMs: number;
  /** Workflow task started → completed (worker: activation, workflow code, commands). */
  wftRunMs: number;
  activities: Record<string, { count: number; queueMs: number; runMs: number }>;
  /** Everything else: server time between an event and the next task being scheduled. */
  otherMs: number;
  eventsByType: Record<string, number>;
}

/** Where the wall time of one run goes, from its history's event timestamps. */
export function timeBreakdown(events: HistoryEvent[]): TimeBreakdown {
  const wallMs = ms(events[events.length - 1]?.eventTime) - ms(events[0]?.eventTime);
  let workflowTasks = 0;
  let wftQueueMs = 0;
  let wftRunMs = 0;
  const activities: TimeBreakdown['activities'] = {};
  const eventsByType: Record<string, number> = {};
  const byId = new Map<string, HistoryEvent>();
  for (const e of events) byId.set(String(e.eventId), e);
  for (const e of events) {
    const type = EventType[e.eventType ?? 0]?.replace('EVENT_TYPE_', '') ?? String(e.eventType);
    eventsByType[type] = (eventsByType[type] ?? 0) + 1;
    if (
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED ||
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED
    ) {
      const a = e.workflowTaskCompletedEventAttributes ?? e.workflowTaskFailedEventAttributes;
      const started = byId.get(String(a?.startedEventId));
      const scheduled = byId.get(String(a?.scheduledEventId));
      workflowTasks += 1;
      if (started && scheduled) {
        wftQueueMs += ms(started.eventTime) - ms(scheduled.eventTime);
        wftRunMs += ms(e.eventTime) - ms(started.eventTime);
      }
    }
    if (
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED ||
      e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
    ) {
      const a = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
      const started = byId.get(String(a?.startedEventId));
      const scheduled = byId.get(String(a?.scheduledEventId));
      const name = scheduled ? (activityName(scheduled) ?? '?') : '?';
      const s = (activities[name] ??= { count: 0, queueMs: 0, runMs: 0 });
      s.count += 1;
      if (started && scheduled) {
        s.queueMs += ms(started.eventTime) - ms(scheduled.eventTime);
        s.runMs += ms(e.eventTime) - ms(started.eventTime);
      }
    }
  }
  const accounted = wftQueueMs + wftRunMs + Object.values(activities).reduce((n, a) => n + a.queueMs + a.runMs, 0);
  return { wallMs, workflowTasks, wftQueueMs, wftRunMs, activities, otherMs: wallMs - accounted, eventsByType };
}

/** The failure that ended (or is stuck on) a run: termination reason, workflow failure or the last workflow-task failure. */
export function failureOf(events: HistoryEvent[]): string | undefined {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i];
    if (e.workflowExecutionTerminatedEventAttributes)
      return `terminated: ${e.workflowExecutionTerminatedEventAttributes.reason}`;
    if (e.workflowExecutionFailedEventAttributes)
      return `failed: ${e.workflowExecutionFailedEventAttributes.failure?.message}`;
    if (e.workflowTaskFailedEventAttributes) {
      const a = e.workflowTaskFailedEventAttributes;
      return `workflow task failed (${pb.api.enums.v1.WorkflowTaskFailedCause[a.cause ?? 0]}): ${a.failure?.message}`;
    }
    if (e.activityTaskFailedEventAttributes)
      return `activity failed: ${e.activityTaskFailedEventAttributes.failure?.message}`;
  }
  return undefined;
}
