/**
 * Recurring batches (issue 27 item 1): a Temporal Schedule whose action starts `agentBatchWorkflow` over a fixed task
 * list (or one `agentWorkflow`), with Temporal's overlap policy (default SKIP: no batch starts while the previous one
 * runs), catch-up window, pause, trigger and backfill. `AgentClient.schedule` and `keel schedule` are built on it.
 *
 * Ids: the action's workflow id is `keel-batch-<scheduleId>` (`keel-run-<scheduleId>` for a single run) and Temporal
 * appends the scheduled time to it, so each batch is `keel-batch-nightly-2026-12-03T02:00:00Z` and its children
 * `keel-batch-nightly-2026-12-03T02:00:00Z-<index>`. Tasks travel in the action (the schedule stores its input and
 * every batch gets a copy), not by page holders (they are released by the first batch that finishes with them). A
 * large task list goes by reference all the same: the client's payload store (README "Large transcripts") holds the
 * action's input once and the schedule and every batch it starts hold a reference to it — the SDK's External Storage
 * stores a schedule's payloads as it does a workflow's. Without a payload store a task list is refused above ~1 MB
 * of JSON.
 */
import { childIdPattern } from '../common/grading.js';
import type { Client, ScheduleHandle, ScheduleOverlapPolicy } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time.js';
import type { AgentRunInput } from '../common/run.js';
import {
  BATCH_WORKFLOW_TYPE,
  progressQuery,
  type AgentBatchResult,
  type BatchProgress,
} from '../common/batch-definitions.js';
import { batchInput, INLINE_MAX_CHARS, type StartBatchOptions } from './batch-client.js';
import { runSummary } from '../common/run-summary.js';
import { MISSING_STORE_DRIVER_TYPE } from '../node-common/payload-storage.js';

/** Whether `client` offloads large payloads to a store of its own (Keel's stand-ins for stores it lacks do not count). */
function storesPayloads(client: Client): boolean {
  const storage = client.options.loadedDataConverter.externalStorage;
  return storage?.drivers.some((d) => d.type !== MISSING_STORE_DRIVER_TYPE) ?? false;
}

/** The memo key of a Keel schedule (what it runs, for `keel schedule describe` and the Web UI). */
export const SCHEDULE_MEMO_KEY = 'keelSchedule';

/** The memo `keelSchedule` of a schedule. */
export interface AgentScheduleMemo {
  /** `batch`: starts agentBatchWorkflow; `run`: starts one agentWorkflow. */
  kind: 'batch' | 'run';
  /** Tasks per batch (1 for a run). */
  tasks: number;
  /** Where the tasks came from (e.g. the file name), when given. */
  source?: string;
  /** The spec as given: `every 6h` or `cron 0 2 * * *`. */
  spec: string;
  /** The action's workflow id; Temporal appends `-<scheduled time>` (RFC 3339, UTC, seconds). */
  workflowIdPrefix: string;
}

/** What a schedule starts and when. Give `cron` or `every`, and `tasks` or `run`. */
export interface AgentScheduleOptions {
  /** The schedule id (a meaningful name: `nightly-triage`). */
  scheduleId: string;
  /** A cron expression (UTC), e.g. `0 2 * * *`. */
  cron?: string;
  /** An interval, e.g. `6h`, `1s` (Temporal durations). */
  every?: Duration;
  /** The batch each action starts (validated by the caller; over ~1 MB of JSON only with a payload store). */
  tasks?: AgentRunInput[];
  /** Or a single run each action starts. */
  run?: AgentRunInput;
  /** The batch's options (concurrency, budget, child task queue, continue-as-new thresholds). */
  batch?: Omit<StartBatchOptions, 'batchId' | 'pageSize' | 'summary' | 'memo' | 'inputFields'>;
  /** What happens when an action is due while the previous one runs. Default `SKIP`. */
  overlap?: ScheduleOverlapPolicy;
  /** How late a missed action (server down) may still start. Default Temporal's (1 year). */
  catchupWindow?: Duration;
  /** Create it paused, with this note. */
  paused?: boolean;
  note?: string;
  /** Where the tasks came from (shown in describe and the Web UI). */
  source?: string;
}

/** The action's workflow id prefix of a schedule. */
export const scheduledIdPrefix = (scheduleId: string, kind: 'batch' | 'run'): string =>
  `keel-${kind === 'batch' ? 'batch' : 'run'}-${scheduleId}`;

/** A schedule option the server would refuse, or tasks too big to carry inline. */
export class InvalidScheduleError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'InvalidScheduleError';
  }
}

/** Checks a Temporal duration (`6h`, `90s`, `1 day`); returns its milliseconds or throws InvalidScheduleError naming `what`. */
export function durationMs(value: Duration, what: string): number {
  let ms: number;
  try {
    ms = msToNumber(value);
  } catch {
    throw new InvalidScheduleError(`${what}: "${String(value)}" is not a duration (e.g. 30s, 6h, 1d).`);
  }
  if (!(ms > 0)) throw new InvalidScheduleError(`${what}: must be longer than 0.`);
  return ms;
}

/**
 * Creates the schedule (rejects with Temporal's `ScheduleAlreadyRunning` when the id is taken). Contract: exactly one
 * of `cron`/`every` and one of `tasks`/`run`; the overlap policy is SKIP unless given; the action's workflows carry the
 * memo `keelSchedule: <scheduleId>`, and the schedule the memo {@link AgentScheduleMemo}.
 */
export async function createAgentSchedule(
  client: Client,
  taskQueue: string,
  o: AgentScheduleOptions,
): Promise<ScheduleHandle> {
  if ((o.cron === undefined) === (o.every === undefined))
    throw new InvalidScheduleError('Give one of cron and every (e.g. cron "0 2 * * *" or every 6h).');
  if ((o.tasks === undefined) === (o.run === undefined))
    throw new InvalidScheduleError('Give one of tasks (a batch) and run (a single run).');
  if (o.every !== undefined) durationMs(o.every, 'every');
  if (o.catchupWindow !== undefined) durationMs(o.catchupWindow, 'catch-up window');
  const kind = o.tasks ? 'batch' : 'run';
  const workflowIdPrefix = scheduledIdPrefix(o.scheduleId, kind);
  const memo: AgentScheduleMemo = {
    kind,
    tasks: o.tasks?.length ?? 1,
    ...(o.source ? { source: o.source } : {}),
    spec: o.cron !== undefined ? `cron ${o.cron}` : `every ${String(o.every)}`,
    workflowIdPrefix,
  };
  const from = o.source ? ` from ${o.source}` : '';
  let action;
  if (o.tasks) {
    const chars = JSON.stringify(o.tasks).length;
    if (chars > INLINE_MAX_CHARS && !storesPayloads(client))
      throw new InvalidScheduleError(
        `${o.tasks.length} tasks are ${(chars / 1024 / 1024).toFixed(1)} MB of JSON and this client has no payload ` +
          `store, so the schedule would carry them inline (at most ${INLINE_MAX_CHARS / 1_000_000} MB): connect with a ` +
          `payload store (AgentClient.connect({ payloadStorage }) — the default unless payloadStorage is false — shared ` +
          `with the workers), or split them into several schedules.`,
      );
    const input = batchInput(o.tasks, o.batch ?? {});
    action = {
      type: 'startWorkflow' as const,
      workflowType: BATCH_WORKFLOW_TYPE,
      taskQueue,
      workflowId: workflowIdPrefix,
      args: [input],
      memo: { [SCHEDULE_MEMO_KEY]: o.scheduleId },
      staticSummary: `scheduled batch of ${o.tasks.length} agent runs${from} (schedule ${o.scheduleId})`,
      staticDetails: `children: ${childIdPattern('<batchId>', input)} · concurrency ${input.concurrency ?? 8}`,
    };
  } else {
    action = {
      type: 'startWorkflow' as const,
      workflowType: 'agentWorkflow',
      taskQueue,
      workflowId: workflowIdPrefix,
      args: [o.run],
      memo: { [SCHEDULE_MEMO_KEY]: o.scheduleId },
      staticSummary: `${runSummary(o.run!)} (schedule ${o.scheduleId})`,
    };
  }
  return client.schedule.create({
    scheduleId: o.scheduleId,
    spec: o.cron !== undefined ? { cronExpressions: [o.cron] } : { intervals: [{ every: o.every! }] },
    action,
    policies: {
      overlap: o.overlap ?? 'SKIP',
      ...(o.catchupWindow !== undefined ? { catchupWindow: o.catchupWindow } : {}),
    },
    state: { paused: o.paused ?? false, ...(o.note ? { note: o.note } : {}) },
    memo: { [SCHEDULE_MEMO_KEY]: memo },
  });
}

/** One workflow a schedule started, with what became of it. */
export interface ScheduledWorkflow {
  workflowId: string;
  scheduledAt: Date;
  /** Temporal's status, lower case (`running`, `completed`, `failed`, …). */
  status: string;
  /** A batch: its summary when completed, its progress while running (when a worker answers). */
  result?: AgentBatchResult;
  progress?: BatchProgress;
}

/**
 * The last `last` workflows the schedule started (Temporal keeps the 10 most recent), newest last, each with its
 * status and, for a batch, its outcome counts (its result, or its `progress` query while it runs).
 */
export async function recentScheduled(
  client: Client,
  handle: ScheduleHandle,
  last = 5,
): Promise<{ memo?: AgentScheduleMemo; workflows: ScheduledWorkflow[] }> {
  const d = await handle.describe();
  const memo = d.memo?.[SCHEDULE_MEMO_KEY] as AgentScheduleMemo | undefined;
  const workflows: ScheduledWorkflow[] = [];
  for (const a of d.info.recentActions.slice(-last)) {
    const workflowId = a.action.workflow.workflowId;
    const wf = client.workflow.getHandle(workflowId);
    const status = (await wf.describe()).status.name.toLowerCase();
    const w: ScheduledWorkflow = { workflowId, scheduledAt: a.scheduledAt, status };
    if (memo?.kind === 'batch' && status === 'completed') w.result = (await wf.result()) as AgentBatchResult;
    if (memo?.kind === 'batch' && status === 'running')
      w.progress = await client.connection
        .withDeadline(Date.now() + 5000, () => wf.query(progressQuery))
        .catch(() => undefined);
    workflows.push(w);
  }
  return { memo, workflows };
}

/** What {@link triggerSchedule} did: the overlap policy the start was sent with, and the workflows running then. */
export interface ScheduleTrigger {
  overlap: ScheduleOverlapPolicy;
  /** Workflow ids the schedule had running when it was triggered (a start under SKIP is skipped while there are). */
  running: string[];
}

/**
 * Starts the schedule's action now (also when paused) under `overlap`, or else under the schedule's own overlap
 * policy, read with `describe()`. Temporal's `ScheduleHandle.trigger()` without a policy sends ALLOW_ALL, so a trigger
 * would start a batch beside the running one whatever the schedule says; use this instead (`keel schedule trigger`
 * does).
 */
export async function triggerSchedule(
  handle: ScheduleHandle,
  overlap?: ScheduleOverlapPolicy,
): Promise<ScheduleTrigger> {
  const d = await handle.describe();
  // a schedule created without a policy has Temporal's default, SKIP
  const policy = overlap ?? d.policies.overlap ?? 'SKIP';
  await handle.trigger(policy);
  return { overlap: policy, running: d.info.runningActions.map((a) => a.workflow.workflowId) };
}
