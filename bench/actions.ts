/**
 * Billable actions counted from a run's history, the way Temporal Cloud's "Billable Actions" column annotates events
 * (docs.temporal.io/cloud/actions): a workflow started (by a client, a continue-as-new or a parent), each activity
 * attempt, the local activities of one workflow task together, a timer, a search-attribute or memo upsert, a signal
 * received or sent, an Update accepted, a child workflow started. Version markers (`patched()`) are not counted.
 * Heartbeats and queries reach the server without an event: the bench counts queries separately (the profile's
 * queries per turn) and the scripted calls in it end before their first heartbeat (activities/heartbeat.ts).
 *
 * A turn starts at the model activity's schedule: actions between two of them belong to the earlier turn, so one turn's
 * figure says what that turn cost, and the median over turns is the steady-state cost of one tool turn.
 */
import type { temporal } from '@temporalio/proto';
import protoModule from '@temporalio/proto';
import { activityName } from './history.js';

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
const E = protoModule.temporal.api.enums.v1.EventType;

/** The kind of action an event bills, or undefined. Activity attempts and local activities are counted by the caller. */
const BILLED: Partial<Record<number, string>> = {
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED]: 'workflow started',
  [E.EVENT_TYPE_TIMER_STARTED]: 'timer',
  [E.EVENT_TYPE_UPSERT_WORKFLOW_SEARCH_ATTRIBUTES]: 'upsert',
  [E.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED]: 'upsert',
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED]: 'signal',
  [E.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED]: 'signal',
  [E.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED]: 'update',
  [E.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED]: 'child workflow',
  [E.EVENT_TYPE_REQUEST_CANCEL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED]: 'cancel request',
};

export interface ActionCount {
  total: number;
  byKind: Record<string, number>;
  /** Actions of each turn, in order (a turn = from one model activity's schedule to the next). */
  perTurn: number[];
}

/** Counts the billable actions of one run's (or one chain's) events; `modelActivity` delimits the turns. */
export function billableActions(events: HistoryEvent[], modelActivity: string): ActionCount {
  const byKind: Record<string, number> = {};
  const perTurn: number[] = [];
  let total = 0;
  let localActivityTask = -1;
  const add = (kind: string, n = 1) => {
    byKind[kind] = (byKind[kind] ?? 0) + n;
    total += n;
    if (perTurn.length > 0) perTurn[perTurn.length - 1] += n;
  };
  // attempts per activity, from its close event (an attempt that failed and was retried has no event of its own)
  const attempts = new Map<string, number>();
  for (const e of events) {
    const started = e.activityTaskStartedEventAttributes;
    if (started) attempts.set(String(started.scheduledEventId), started.attempt ?? 1);
  }
  let workflowTask = 0;
  for (const e of events) {
    const type = e.eventType ?? 0;
    if (type === E.EVENT_TYPE_WORKFLOW_TASK_COMPLETED) workflowTask += 1;
    if (type === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED) {
      if (activityName(e) === modelActivity) perTurn.push(0);
      add('activity', attempts.get(String(e.eventId)) ?? 1);
      continue;
    }
    if (type === E.EVENT_TYPE_MARKER_RECORDED) {
      // local activities recorded by one workflow task bill one action together
      if (e.markerRecordedEventAttributes?.markerName === 'core_local_activity' && localActivityTask !== workflowTask) {
        localActivityTask = workflowTask;
        add('local activities');
      }
      continue;
    }
    const kind = BILLED[type];
    if (kind) add(kind);
  }
  return { total, byKind, perTurn };
}

/** The median of the turns' action counts, leaving out the first and the last turn (start and close extras). */
export function steadyTurnActions(count: ActionCount): number {
  const inner = count.perTurn.slice(1, -1).sort((a, b) => a - b);
  if (inner.length === 0) return NaN;
  return inner[Math.floor(inner.length / 2)];
}
