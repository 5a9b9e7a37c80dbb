/**
 * Where a tool call runs (docs/architecture.md#worker-affinity, docs/local-tools.md): a local activity first for tools
 * reported with `localActivity`; a worker-local tool on the run's home queue, moving to a new home when its home worker
 * is lost; any other on the run's tool queue, or in a run an `all` worker started on the run's own task queue (0.8.0).
 */
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/common';
import { isCancellation, workflowInfo } from '@temporalio/workflow';
import { homeWorkerLost, OPERATION_ABORTED, toolInterrupted } from '../../common/errors.js';
import type { AgentEvent } from '../../common/events.js';
import type { ToolCall } from '../../common/messages.js';
import { toolTaskQueue } from '../../common/task-queues.js';
import type { ToolInfo, ToolOutcome } from '../../common/wire.js';
import { localToolActivityOptions, setupActivities, toolActivityOptions } from '../activities.js';
import { isNotHome } from '../failure-outcomes.js';
import { PATCH } from '../patches.js';
import type { AbortKind, SessionState } from './state.js';
import { HOME_LOST, loopErrorOutcome, REFUSED_HERE, track, trackThen, type ToolTracking } from './tool-tracking.js';
import { since } from '../since.js';

/**
 * The run's home for worker-local tools. `homeQueue` and `rehomed` are carried state (`SessionState`); `notHome` and
 * `rehoming` live in this execution only.
 */
export interface ToolHome {
  /** The task queue of the run's home worker; `''`: no worker has one; undefined: not asked yet. */
  homeQueue?: string;
  /** The last move to a new home worker (`homeWorkerLost` text), shown in the details. */
  rehomed?: string;
  /**
   * The home queue a local tool call was refused for (this workflow ran on another worker): later worker-local calls
   * of this execution go straight to the home queue while the home is the same.
   */
  notHome?: string;
  /** A move to a new home worker under way (concurrent calls that lost the home wait for the same one). */
  rehoming?: Promise<void>;
  /** Tool activities go to the run's own task queue (`startRun` ran on a worker with role `all`, from 0.8.0). */
  toolsOnRunQueue?: boolean;
}

/** The run's `ToolHome`: the home queue and its last move read and written in the carried state, the rest live. */
export class RunHome implements ToolHome {
  notHome?: string;
  rehoming?: Promise<void>;
  constructor(private readonly state: Pick<SessionState, 'homeQueue' | 'rehomed' | 'toolsOnRunQueue'>) {}
  get toolsOnRunQueue(): boolean | undefined {
    return this.state.toolsOnRunQueue;
  }
  set toolsOnRunQueue(on: boolean | undefined) {
    this.state.toolsOnRunQueue = on;
  }
  get homeQueue(): string | undefined {
    return this.state.homeQueue;
  }
  set homeQueue(queue: string | undefined) {
    this.state.homeQueue = queue;
  }
  get rehomed(): string | undefined {
    return this.state.rehomed;
  }
  set rehomed(text: string | undefined) {
    this.state.rehomed = text;
  }
}

/** What placing a call needs of the session: its config, abort, home, events and tracking. */
export interface ToolPlacement extends ToolTracking {
  readonly config: SessionState['config'];
  /** Read at every step: an abort between two steps stops the call. */
  readonly abort?: AbortKind;
  readonly home: ToolHome;
  emit(event: AgentEvent): void;
}

const DEFAULT_HOME_WORKER_TIMEOUT = '30s';
/** Moves to a new home within one call, at most (then the call's failure is its result). */
const MAX_MOVES_PER_CALL = 3;

const NOT_HOME = Symbol('not home');

/** Runs a call as a local activity; `home`: the run's home queue, which the worker running it must own. */
export type LocalRun<T> = (options: LocalActivityOptions, home: { home?: string }) => Promise<T>;

/** Schedules a call as an activity; `placed`: on the run's task queue (the input says so, for a `model` worker's refusal). */
export type ActivityRun<T> = (options: ActivityOptions, placed?: { onRunQueue: true }) => Promise<T>;

/**
 * Schedules a tool activity. A tool reported with `localActivity` runs as a local activity first (docs/local-tools.md):
 * a worker-local one only while the run has a home, carrying it, and NOT_HOME when this workflow runs elsewhere (the
 * call then goes the usual way below). A worker-local tool (worker affinity, README) goes to the run's home queue
 * with a schedule-to-start timeout; when the home worker does not start it in time, the run asks its task queue for a
 * new home: an idempotent call is retried there, any other gets the interrupted result. A non-idempotent call is
 * retried on the home queue only to fetch an outcome its home worker recorded (worker/tool-ledger.ts), never to run
 * again. Other tools go to the run's tool queue (`<taskQueue>-tools`, from 0.4.2), or its task queue in runs recorded
 * before that and, from 0.8.0, in runs an `all` worker started (`dispatchOnRunQueue`). A failure is the call's error
 * result (workflows/agent/tool-tracking.ts). `after` takes the result in the same `then` as the tracking.
 */
export function dispatch<T, R>(
  p: ToolPlacement,
  call: ToolCall,
  info: ToolInfo | undefined,
  summary: string,
  run: ActivityRun<T>,
  local: LocalRun<T>,
  after: (result: T | ToolOutcome) => R | PromiseLike<R>,
): Promise<R> {
  if (info?.localActivity && since(PATCH.localTools))
    return dispatchLocalFirst(p, call, info, summary, run, local).then(after);
  return dispatchActivity(p, call, info, summary, run, after);
}

/** `dispatch` of a tool reported with `localActivity`: a local activity, or the usual way when refused off its home. */
async function dispatchLocalFirst<T>(
  p: ToolPlacement,
  call: ToolCall,
  info: ToolInfo,
  summary: string,
  run: ActivityRun<T>,
  local: LocalRun<T>,
): Promise<T | ToolOutcome> {
  const placed = await runLocal(p, call, info, summary, local);
  return placed !== NOT_HOME ? placed : dispatchActivity(p, call, info, summary, run, (result) => result);
}

/**
 * `dispatch` as an activity: on the run's tool queue (see `onToolQueue`), or on its home queue for a worker-local tool;
 * `after` takes the result in the tracking's own `then` (workflows/agent/tool-tracking.ts `trackThen`).
 */
function dispatchActivity<T, R>(
  p: ToolPlacement,
  call: ToolCall,
  info: ToolInfo | undefined,
  summary: string,
  run: ActivityRun<T>,
  after: (result: T | ToolOutcome) => R | PromiseLike<R>,
): Promise<R> {
  const toolQueue = onToolQueue();
  if (toolQueue.taskQueue !== undefined && !info?.workerLocal && onRunQueue(p.home))
    return dispatchOnRunQueue(p, call, info, summary, run, after);
  const options = { ...toolActivityOptions(p.config, info, summary), ...toolQueue };
  if (!info?.workerLocal || !since(PATCH.workerAffinity))
    return trackThen(p, call, info?.idempotent, () => run(options), after);
  return dispatchHome(p, call, info, options, run).then(after);
}

/**
 * Whether this run's tool activities go to its own task queue (patch `keel-0.8-tools-on-run-queue`, README "Worker
 * roles"): `startRun` ran on a worker with role `all`, which polls both queues and runs every tool activity. There
 * the server hands an activity scheduled by a workflow task straight back to the worker completing it (eager
 * dispatch), as the engine floor's; on `<taskQueue>-tools` every call paid a second queue's matching (bench section 1,
 * `floor + tool activity on another task queue`).
 */
function onRunQueue(home: ToolHome): boolean {
  return home.toolsOnRunQueue === true && since(PATCH.toolsOnRunQueue);
}

/**
 * `dispatch` of a call that is not worker-local on the run's own task queue. A worker with role `model` polls that
 * queue too and refuses the call (`KeelNotHome`, before anything runs; worker/plugin.ts): the call is placed again the
 * usual way, on the tool queue, and so are the run's later calls.
 */
function dispatchOnRunQueue<T, R>(
  p: ToolPlacement,
  call: ToolCall,
  info: ToolInfo | undefined,
  summary: string,
  run: ActivityRun<T>,
  after: (result: T | ToolOutcome) => R | PromiseLike<R>,
): Promise<R> {
  const options = toolActivityOptions(p.config, info, summary);
  const placed = { onRunQueue: true } as const;
  return trackThen(
    p,
    call,
    info?.idempotent,
    () => run(options, placed),
    (result) => {
      if (result !== REFUSED_HERE) return after(result);
      p.home.toolsOnRunQueue = false;
      return dispatchActivity(p, call, info, summary, run, after);
    },
    true,
  );
}

/** `dispatch` of a worker-local tool: on the run's home queue, moving to a new home when the home worker is lost. */
async function dispatchHome<T>(
  p: ToolPlacement,
  call: ToolCall,
  info: ToolInfo,
  options: ActivityOptions,
  run: ActivityRun<T>,
): Promise<T | ToolOutcome> {
  for (let moves = 0; ; moves++) {
    const queue = p.home.homeQueue ?? (await newHome(p));
    if (p.abort) return loopErrorOutcome(OPERATION_ABORTED);
    if (!queue) return track(p, call, info.idempotent, () => run(options));
    const onHome: ActivityOptions = {
      ...options,
      taskQueue: queue,
      scheduleToStartTimeout: p.config.homeWorkerTimeout ?? DEFAULT_HOME_WORKER_TIMEOUT,
      ...(info.idempotent ? {} : { retry: { maximumAttempts: 3, initialInterval: '1s' } }),
    };
    const result = await track(p, call, info.idempotent, () => run(onHome), moves < MAX_MOVES_PER_CALL);
    if (result !== HOME_LOST) return result;
    await rehome(p, call, queue);
    if (p.abort) return loopErrorOutcome(OPERATION_ABORTED);
    if (!info.idempotent) return loopErrorOutcome(toolInterrupted(call.name));
  }
}

/**
 * One call as a local activity. A worker-local tool needs its home worker's disk: without a known home, or after this
 * execution was refused for the same home, NOT_HOME at once (no marker); a home of `''` (the workers have none)
 * lets any worker run it, as its activity would.
 */
async function runLocal<T>(
  p: ToolPlacement,
  call: ToolCall,
  info: ToolInfo,
  summary: string,
  local: LocalRun<T>,
): Promise<T | ToolOutcome | typeof NOT_HOME> {
  let home: { home?: string } = {};
  if (info.workerLocal && since(PATCH.workerAffinity)) {
    const queue = p.home.homeQueue;
    if (queue === undefined || queue === p.home.notHome) return NOT_HOME;
    if (queue) home = { home: queue };
  }
  const options = localToolActivityOptions(info, summary);
  const result = await track(p, call, info.idempotent, () =>
    local(options, home).catch((err: unknown) => (isNotHome(err) ? NOT_HOME : Promise.reject(err))),
  );
  if (result === NOT_HOME) p.home.notHome = home.home;
  return result;
}

/**
 * The home queue of whichever worker of the run's tool queue answers (`onToolQueue`); undefined (and `''` stored:
 * tools stay on the run's tool queue) when the workers have none or the activity failed. Never throws; an abort leaves
 * the home as is.
 */
async function newHome(p: ToolPlacement): Promise<string | undefined> {
  try {
    const r = await p.runCancellable(() =>
      setupActivities.workerHome.executeWithOptions(
        { summary: 'find a home worker for worker-local tools', ...onToolQueue() },
        [],
      ),
    );
    p.home.homeQueue = r.homeQueue ?? '';
    return r.homeQueue;
  } catch (err) {
    if (!isCancellation(err)) p.home.homeQueue = '';
    return undefined;
  }
}

/** The home `lost` is gone: one new home for every call that lost it (they wait for the same move). */
async function rehome(p: ToolPlacement, call: ToolCall, lost: string): Promise<void> {
  const home = p.home;
  if (home.rehoming) return home.rehoming;
  if (home.homeQueue !== lost) return; // another call of the batch already moved the run
  home.rehoming = (async () => {
    const to = await newHome(p);
    if (p.abort) return;
    const timeout = p.config.homeWorkerTimeout ?? DEFAULT_HOME_WORKER_TIMEOUT;
    const text = homeWorkerLost(call.name, lost, typeof timeout === 'number' ? `${timeout}ms` : timeout, to);
    home.rehomed = text;
    p.emit({
      type: 'worker_rehomed',
      toolCallId: call.id,
      toolName: call.name,
      from: lost,
      ...(to ? { to } : {}),
      text,
    });
    p.publishDetails();
  })();
  try {
    await home.rehoming;
  } finally {
    home.rehoming = undefined;
  }
}

/**
 * Where a tool activity goes when it does not go to a home queue: the run's tool queue, `<taskQueue>-tools`
 * (common/task-queues.ts), polled by `tools` and `all` workers; in runs recorded before 0.4.2, the run's task queue.
 */
export function onToolQueue(): { taskQueue?: string } {
  return since(PATCH.toolQueue) ? { taskQueue: toolTaskQueue(workflowInfo().taskQueue) } : {};
}
