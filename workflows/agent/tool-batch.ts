/**
 * One assistant message's tool calls (docs/architecture.md#tool-calls): length truncation, unknown tools, sequential vs
 * parallel, preparation in source order, executions overlapping, `tool_execution_end` in completion order, results
 * in source order, the terminate rule. Failures never escape: each becomes an `isError` result.
 */
import type { ActivityOptions, LocalActivityOptions } from '@temporalio/common';
import { isCancellation, patched, workflowInfo } from '@temporalio/workflow';
import { isHomeLost, isNotHome, preparationFailureText, toolCallFailureText } from '../failure-outcomes.js';
import { PATCH } from '../patches.js';
import {
  duplicateToolCallId,
  homeWorkerLost,
  lengthTruncated,
  OPERATION_ABORTED,
  toolInterrupted,
  toolNotFound,
} from '../../common/errors.js';
import { toolCallsOf, type AssistantMessage, type ToolCall, type ToolResultMessage } from '../../common/messages.js';
import type { PreparedCall, ToolCallRef, ToolInfo, ToolOutcome } from '../../common/wire.js';
import {
  localPreparationOptions,
  localToolActivities,
  localToolActivityOptions,
  setupActivities,
  toolActivities,
  toolActivityOptions,
  toolSummary,
} from '../activities.js';
import { workflowNow } from '../clock.js';
import { appendMessage, runCancellable, type Session, type SuspendedBatch } from './session.js';
import { publishDetails } from './visibility.js';
import { toolResultMessage } from '../../common/tool-result.js';
import type { ApprovalRecord } from '../../common/updates.js';
import { toolTaskQueue } from '../../common/task-queues.js';
import { awaitApproval, isPending } from './approvals.js';

/** `suspended`: continue-as-new is due while calls await approval; the turn loop carries the batch into the new run. */
export type BatchResult =
  { results: ToolResultMessage[]; terminate: boolean; suspended?: undefined } | { suspended: SuspendedBatch };

/** `resume`: the batch carried across continue-as-new (its finished calls, the rest pending or not started). */
export async function runToolBatch(
  s: Session,
  assistant: AssistantMessage,
  assistantIndex: number,
  resume?: SuspendedBatch,
): Promise<BatchResult> {
  const calls = toolCallsOf(assistant);
  if (assistant.stopReason === 'length') return truncatedBatch(s, calls);
  const repeated = repeatedIds(calls);
  if (repeated.size > 0 && (resume ? patched(PATCH.resumedRepeatedIds) : patched(PATCH.duplicateCallIds)))
    return batchWithRepeatedIds(s, calls, repeated, assistantIndex, resume);
  const sequential =
    s.state.config.toolExecution === 'sequential' ||
    calls.some((c) => toolInfo(s, c.name)?.executionMode === 'sequential');
  const done = new Map<string, Finalised>();
  const outcome = resume
    ? await resumedBatch(s, calls, assistantIndex, resume, done)
    : sequential || calls.length === 1
      ? await sequentialBatch(s, calls, assistantIndex, done)
      : await parallelBatch(s, calls, assistantIndex, done);
  if (outcome === SUSPEND) {
    const unrecorded = [...done].filter(([, f]) => !f.recorded);
    return { suspended: { assistantIndex, done: Object.fromEntries(unrecorded.map(([id, f]) => [id, f.outcome])) } };
  }
  recordInOrder(s, calls, done);
  const outcomes = calls.flatMap((call) => done.get(call.id) ?? []);
  return {
    results: outcomes.map((o) => o.message),
    terminate: outcomes.length > 0 && outcomes.every((o) => o.outcome.terminate === true),
  };
}

/** Positions of calls whose id an earlier call of the same message already has. */
function repeatedIds(calls: ToolCall[]): Set<number> {
  const seen = new Set<string>();
  const out = new Set<number>();
  calls.forEach((c, i) => (seen.has(c.id) ? out.add(i) : seen.add(c.id)));
  return out;
}

/**
 * A message that reuses a tool call id: activities find a call's arguments by its id, so only the first call with an
 * id may run. Each later one gets an error result at its place and is never executed; the others run as usual. A batch
 * carried across continue-as-new (`resume`) resumes its unique calls only, and refuses the later ones at its end.
 */
async function batchWithRepeatedIds(
  s: Session,
  calls: ToolCall[],
  repeated: Set<number>,
  assistantIndex: number,
  resume?: SuspendedBatch,
): Promise<BatchResult> {
  const unique = calls.filter((_, i) => !repeated.has(i));
  const sequential =
    s.state.config.toolExecution === 'sequential' ||
    unique.some((c) => toolInfo(s, c.name)?.executionMode === 'sequential');
  const done = new Map<string, Finalised>();
  const outcome = resume
    ? await resumedBatch(s, unique, assistantIndex, resume, done)
    : sequential || unique.length === 1
      ? await sequentialBatch(s, unique, assistantIndex, done)
      : await parallelBatch(s, unique, assistantIndex, done);
  if (outcome === SUSPEND) {
    const unrecorded = [...done].filter(([, f]) => !f.recorded);
    return { suspended: { assistantIndex, done: Object.fromEntries(unrecorded.map(([id, f]) => [id, f.outcome])) } };
  }
  recordInOrder(s, unique, done);
  const outcomes = unique.flatMap((call) => done.get(call.id) ?? []);
  const refused = calls.flatMap((call, i) => {
    if (!repeated.has(i)) return [];
    start(s, call);
    const f = settleCall(s, call, errorOutcome(duplicateToolCallId(call.id, call.name)));
    record(s, f);
    return [f];
  });
  const all = [...outcomes, ...refused];
  return { results: all.map((o) => o.message), terminate: false };
}

interface Finalised {
  message: ToolResultMessage;
  outcome: ToolOutcome;
  /** Already appended to the transcript (sequential batches record each result as it finishes). */
  recorded?: boolean;
}

/** Appends the results not yet in the transcript, in assistant source order. */
function recordInOrder(s: Session, calls: ToolCall[], done: Map<string, Finalised>): void {
  for (const call of calls) {
    const f = done.get(call.id);
    if (f && !f.recorded) {
      record(s, f);
      f.recorded = true;
    }
  }
}

const SUSPEND = Symbol('suspend');
type Suspend = typeof SUSPEND;

/** Length truncation: nothing is looked up, validated or executed; the batch never terminates. */
function truncatedBatch(s: Session, calls: ToolCall[]): BatchResult {
  const results = calls.map((call) => {
    start(s, call);
    const finalised = settleCall(s, call, errorOutcome(lengthTruncated(call.name)));
    record(s, finalised);
    return finalised.message;
  });
  return { results, terminate: false };
}

/** One call after another, each finished before the next starts; stops at an abort. Results go into `done`. */
async function sequentialBatch(
  s: Session,
  calls: ToolCall[],
  assistantIndex: number,
  done: Map<string, Finalised>,
): Promise<Suspend | void> {
  for (const call of calls) {
    start(s, call);
    const outcome = await prepareAndExecute(s, call, assistantIndex);
    if (outcome === SUSPEND) return SUSPEND;
    const finalised = settleCall(s, call, outcome);
    record(s, finalised);
    done.set(call.id, { ...finalised, recorded: true });
    if (s.abort) break;
  }
}

async function parallelBatch(
  s: Session,
  calls: ToolCall[],
  assistantIndex: number,
  finalised: Map<string, Finalised>,
): Promise<Suspend | void> {
  const prepared = await prepareKnown(s, calls, assistantIndex);
  const deferred: { call: ToolCall; args?: unknown; argsDigest?: string }[] = [];
  for (const call of calls) {
    const info = toolInfo(s, call.name);
    const p = info ? prepared.get(call.id) : undefined;
    if (info && !p) break; // preparation stopped at an abort: later calls get no events and no result
    start(s, call);
    if (!p || p.status === 'immediate') {
      finalised.set(
        call.id,
        settleCall(s, call, p?.status === 'immediate' ? p.outcome : errorOutcome(toolNotFound(call.name))),
      );
    } else deferred.push({ call, args: p.args, ...(p.status === 'approval' ? { argsDigest: p.argsDigest } : {}) });
  }
  // executions overlap (a call needing approval waits meanwhile); each tool_execution_end is emitted as its call completes
  return overlap(s, deferred, assistantIndex, finalised);
}

/** Runs the calls concurrently; SUSPEND when some call was suspended awaiting approval (the others finished). */
async function overlap(
  s: Session,
  calls: { call: ToolCall; args?: unknown; argsDigest?: string }[],
  assistantIndex: number,
  finalised: Map<string, Finalised>,
): Promise<Suspend | void> {
  let suspended = false;
  await Promise.all(
    calls.map(async ({ call, args, argsDigest }) => {
      const outcome = s.abort
        ? errorOutcome(OPERATION_ABORTED)
        : argsDigest !== undefined
          ? await approveThenExecute(s, call, assistantIndex, args, argsDigest)
          : await execute(s, call, assistantIndex, args);
      if (outcome === SUSPEND) suspended = true;
      else finalised.set(call.id, settleCall(s, call, outcome));
    }),
  );
  return suspended ? SUSPEND : undefined;
}

/**
 * A batch carried across continue-as-new: the finished calls keep their outcomes, the calls awaiting approval wait
 * again (concurrently, their deadlines unchanged), then calls never started run one after another (a sequential batch
 * suspended at its pending call). A resumed run continues-as-new again only after history grew by another
 * `continueAsNewAfterBytes`, so a large carried state cannot loop.
 */
async function resumedBatch(
  s: Session,
  calls: ToolCall[],
  assistantIndex: number,
  resume: SuspendedBatch,
  done: Map<string, Finalised>,
): Promise<Suspend | void> {
  s.continueAsNewRetryAt = workflowInfo().historySize + (s.state.config.continueAsNewAfterBytes ?? 8 * 1024 * 1024);
  for (const call of calls)
    if (resume.done[call.id])
      done.set(call.id, { message: toolResultMessage(call, resume.done[call.id]), outcome: resume.done[call.id] });
  const waiting = calls.flatMap((call) => {
    const p = isPending(s, call.id, assistantIndex);
    return p ? [{ call, args: p.args, argsDigest: p.argsDigest }] : [];
  });
  if ((await overlap(s, waiting, assistantIndex, done)) === SUSPEND) return SUSPEND;
  recordInOrder(s, calls, done);
  if (s.abort) return;
  return sequentialBatch(
    s,
    calls.filter((c) => !done.has(c.id)),
    assistantIndex,
    done,
  );
}

/** Waits for the approval of a prepared call, then executes it; a refusal is the call's error result. */
async function approveThenExecute(
  s: Session,
  call: ToolCall,
  assistantIndex: number,
  args: unknown,
  argsDigest: string,
): Promise<ToolOutcome | Suspend> {
  const wait = await awaitApproval(s, call, assistantIndex, args ?? call.arguments, argsDigest);
  if (wait.kind === 'suspend') return SUSPEND;
  if (wait.kind === 'refused') return wait.outcome;
  return s.abort ? errorOutcome(OPERATION_ABORTED) : execute(s, call, assistantIndex, args, wait.record);
}

/**
 * One activity prepares every known call, strictly in source order; it stops early when the run is aborted. A local
 * activity when every call is placed locally (preparation reads only the transcript, any worker may do it).
 */
async function prepareKnown(s: Session, calls: ToolCall[], assistantIndex: number): Promise<Map<string, PreparedCall>> {
  const known = calls.filter((c) => toolInfo(s, c.name));
  const byId = new Map<string, PreparedCall>();
  if (known.length === 0 || s.abort) return byId;
  const input = {
    run: s.run,
    assistantIndex,
    digest: s.digests[assistantIndex + 1],
    calls: known.map((c) => ({ toolCallId: c.id, toolName: c.name })),
    metadata: s.state.config.metadata ?? {},
  };
  const summary = `prepare ${known.length} tool calls`;
  const local = known.every((c) => toolInfo(s, c.name)?.localActivity) && patched(PATCH.localTools);
  try {
    const list = await runCancellable(s, () =>
      local
        ? localToolActivities.prepareToolCalls.executeWithOptions(
            { ...localPreparationOptions(summary), retry: { maximumAttempts: 3 } },
            [input],
          )
        : toolActivities.prepareToolCalls.executeWithOptions(
            {
              ...toolActivityOptions(s.state.config, undefined, summary),
              retry: { maximumAttempts: 3 },
              ...onToolQueue(),
            },
            [input],
          ),
    );
    for (const p of list) byId.set(p.toolCallId, p);
  } catch (err) {
    const text = preparationFailureText(err);
    if (text !== undefined)
      for (const c of known) byId.set(c.id, { toolCallId: c.id, status: 'immediate', outcome: errorOutcome(text) });
  }
  return byId;
}

/** One call in one activity; a call needing approval is only prepared there, and executed once approved. */
function prepareAndExecute(s: Session, call: ToolCall, assistantIndex: number): Promise<ToolOutcome | Suspend> {
  const info = toolInfo(s, call.name);
  if (!info) return Promise.resolve(errorOutcome(toolNotFound(call.name)));
  if (s.abort) return Promise.resolve(errorOutcome(OPERATION_ABORTED));
  const ref = callRef(s, call, assistantIndex);
  // a then, not an async function awaiting: one promise fewer per tool call, the caller resumed in the same microtask
  return dispatch(
    s,
    call,
    info,
    summaryOf(s, call, call.arguments),
    (options) => toolActivities.runToolCall.executeWithOptions(options, [ref]),
    (options, home) => localToolActivities.runToolCall.executeWithOptions(options, [{ ...ref, ...home }]),
  ).then((result) => {
    if (!('prepared' in result)) return result;
    return result.prepared === 'approval'
      ? approveThenExecute(s, call, assistantIndex, result.args, result.argsDigest)
      : result.outcome;
  });
}

async function execute(
  s: Session,
  call: ToolCall,
  assistantIndex: number,
  args: unknown,
  approval?: ApprovalRecord,
): Promise<ToolOutcome> {
  const info = toolInfo(s, call.name);
  const input = {
    ...callRef(s, call, assistantIndex),
    ...(args === undefined ? {} : { args }),
    ...(approval ? { approval } : {}),
  };
  return dispatch(
    s,
    call,
    info,
    summaryOf(s, call, args ?? call.arguments),
    (options) => toolActivities.executeToolCall.executeWithOptions(options, [input]),
    (options, home) => localToolActivities.executeToolCall.executeWithOptions(options, [{ ...input, ...home }]),
  );
}

const DEFAULT_HOME_WORKER_TIMEOUT = '30s';
/** Moves to a new home within one call, at most (then the call's failure is its result). */
const MAX_MOVES_PER_CALL = 3;
const HOME_LOST = Symbol('home lost');

const NOT_HOME = Symbol('not home');

/** Runs a call as a local activity; `home`: the run's home queue, which the worker running it must own. */
type LocalRun<T> = (options: LocalActivityOptions, home: { home?: string }) => Promise<T>;

/**
 * Schedules a tool activity. A tool reported with `localActivity` runs as a local activity first (docs/local-tools.md):
 * a worker-local one only while the run has a home, carrying it, and NOT_HOME when this workflow runs elsewhere (the
 * call then goes the usual way below). A worker-local tool (worker affinity, README) goes to the run's home queue
 * with a schedule-to-start timeout; when the home worker does not start it in time, the run asks its task queue for a
 * new home: an idempotent call is retried there, any other gets the interrupted result. A non-idempotent call is
 * retried on the home queue only to fetch an outcome its home worker recorded (worker/tool-ledger.ts), never to run
 * again. Other tools go to the run's tool queue (`<taskQueue>-tools`, from 0.4.2), or its task queue in runs recorded
 * before that.
 */
function dispatch<T>(
  s: Session,
  call: ToolCall,
  info: ToolInfo | undefined,
  summary: string,
  run: (options: ActivityOptions) => Promise<T>,
  local: LocalRun<T>,
): Promise<T | ToolOutcome> {
  if (info?.localActivity && patched(PATCH.localTools)) return dispatchLocalFirst(s, call, info, summary, run, local);
  return dispatchActivity(s, call, info, summary, run);
}

/** `dispatch` of a tool reported with `localActivity`: a local activity, or the usual way when refused off its home. */
async function dispatchLocalFirst<T>(
  s: Session,
  call: ToolCall,
  info: ToolInfo,
  summary: string,
  run: (options: ActivityOptions) => Promise<T>,
  local: LocalRun<T>,
): Promise<T | ToolOutcome> {
  const placed = await runLocal(s, call, info, summary, local);
  return placed !== NOT_HOME ? placed : dispatchActivity(s, call, info, summary, run);
}

/** `dispatch` as an activity: on the run's tool queue (see `onToolQueue`), or on its home queue for a worker-local tool. */
function dispatchActivity<T>(
  s: Session,
  call: ToolCall,
  info: ToolInfo | undefined,
  summary: string,
  run: (options: ActivityOptions) => Promise<T>,
): Promise<T | ToolOutcome> {
  const options = { ...toolActivityOptions(s.state.config, info, summary), ...onToolQueue() };
  if (!info?.workerLocal || !patched(PATCH.workerAffinity)) return track(s, call, () => run(options));
  return dispatchHome(s, call, info, options, run);
}

/** `dispatch` of a worker-local tool: on the run's home queue, moving to a new home when the home worker is lost. */
async function dispatchHome<T>(
  s: Session,
  call: ToolCall,
  info: ToolInfo,
  options: ActivityOptions,
  run: (options: ActivityOptions) => Promise<T>,
): Promise<T | ToolOutcome> {
  for (let moves = 0; ; moves++) {
    const queue = s.state.homeQueue ?? (await newHome(s));
    if (s.abort) return errorOutcome(OPERATION_ABORTED);
    if (!queue) return track(s, call, () => run(options));
    const onHome: ActivityOptions = {
      ...options,
      taskQueue: queue,
      scheduleToStartTimeout: s.state.config.homeWorkerTimeout ?? DEFAULT_HOME_WORKER_TIMEOUT,
      ...(info.idempotent ? {} : { retry: { maximumAttempts: 3, initialInterval: '1s' } }),
    };
    const result = await track(s, call, () => run(onHome), moves < MAX_MOVES_PER_CALL);
    if (result !== HOME_LOST) return result;
    await rehome(s, call, queue);
    if (s.abort) return errorOutcome(OPERATION_ABORTED);
    if (!info.idempotent) return errorOutcome(toolInterrupted(call.name));
  }
}

/**
 * One call as a local activity. A worker-local tool needs its home worker's disk: without a known home, or after this
 * execution was refused for the same home, NOT_HOME at once (no marker); a home of `''` (the workers have none)
 * lets any worker run it, as its activity would.
 */
async function runLocal<T>(
  s: Session,
  call: ToolCall,
  info: ToolInfo,
  summary: string,
  local: LocalRun<T>,
): Promise<T | ToolOutcome | typeof NOT_HOME> {
  let home: { home?: string } = {};
  if (info.workerLocal && patched(PATCH.workerAffinity)) {
    const queue = s.state.homeQueue;
    if (queue === undefined || queue === s.notHome) return NOT_HOME;
    if (queue) home = { home: queue };
  }
  const options = localToolActivityOptions(info, summary);
  const result = await track(s, call, () =>
    local(options, home).catch((err: unknown) => (isNotHome(err) ? NOT_HOME : Promise.reject(err))),
  );
  if (result === NOT_HOME) s.notHome = home.home;
  return result;
}

/**
 * The home queue of whichever worker of the run's tool queue answers (`onToolQueue`); undefined (and `''` stored: tools stay on the
 * run's tool queue) when the workers have none or the activity failed. Never throws; an abort leaves the state as is.
 */
async function newHome(s: Session): Promise<string | undefined> {
  try {
    const r = await runCancellable(s, () =>
      setupActivities.workerHome.executeWithOptions(
        { summary: 'find a home worker for worker-local tools', ...onToolQueue() },
        [],
      ),
    );
    s.state.homeQueue = r.homeQueue ?? '';
    return r.homeQueue;
  } catch (err) {
    if (!isCancellation(err)) s.state.homeQueue = '';
    return undefined;
  }
}

/** The home `lost` is gone: one new home for every call that lost it (they wait for the same move). */
async function rehome(s: Session, call: ToolCall, lost: string): Promise<void> {
  if (s.rehoming) return s.rehoming;
  if (s.state.homeQueue !== lost) return; // another call of the batch already moved the run
  s.rehoming = (async () => {
    const to = await newHome(s);
    if (s.abort) return;
    const timeout = s.state.config.homeWorkerTimeout ?? DEFAULT_HOME_WORKER_TIMEOUT;
    const text = homeWorkerLost(call.name, lost, typeof timeout === 'number' ? `${timeout}ms` : timeout, to);
    s.state.rehomed = text;
    s.events.emit({
      type: 'worker_rehomed',
      toolCallId: call.id,
      toolName: call.name,
      from: lost,
      ...(to ? { to } : {}),
      text,
    });
    publishDetails(s);
  })();
  try {
    await s.rehoming;
  } finally {
    s.rehoming = undefined;
  }
}

/**
 * Where a tool activity goes when it does not go to a home queue: the run's tool queue, `<taskQueue>-tools`
 * (common/task-queues.ts), polled by `tools` and `all` workers; in runs recorded before 0.4.2, the run's task queue.
 */
function onToolQueue(): { taskQueue?: string } {
  return patched(PATCH.toolQueue) ? { taskQueue: toolTaskQueue(workflowInfo().taskQueue) } : {};
}

/** Runs a tool activity; a failure becomes an error result (workflows/failure-outcomes.ts `toolCallFailureText`). */
function track<T>(s: Session, call: ToolCall, fn: () => Promise<T>): Promise<T | ToolOutcome>;
/** `rehomable`: a home worker that never started the call gives HOME_LOST. */
function track<T>(
  s: Session,
  call: ToolCall,
  fn: () => Promise<T>,
  rehomable: boolean,
): Promise<T | ToolOutcome | typeof HOME_LOST>;
function track<T>(
  s: Session,
  call: ToolCall,
  fn: () => Promise<T>,
  rehomable = false,
): Promise<T | ToolOutcome | typeof HOME_LOST> {
  s.runningTools.set(call.id, { toolName: call.name, since: workflowNow() });
  publishDetails(s);
  const settled = () => {
    s.runningTools.delete(call.id);
    publishDetails(s);
  };
  // one `then` instead of an async function awaiting: one promise fewer per tool call, settled in the same microtask
  return runCancellable(s, fn).then(
    (result) => {
      settled();
      return result;
    },
    (err: unknown) => {
      settled();
      if (rehomable && isHomeLost(err)) return HOME_LOST;
      return errorOutcome(
        toolCallFailureText(err, { name: call.name, idempotent: toolInfo(s, call.name)?.idempotent }),
      );
    },
  );
}

/** The tool's own summary (computed by `callModel` with the tool's `summary`), else a generic one. */
function summaryOf(s: Session, call: ToolCall, args: unknown): string {
  return s.toolSummaries?.[call.id] ?? toolSummary(call.name, args);
}

function callRef(s: Session, call: ToolCall, assistantIndex: number): ToolCallRef {
  return {
    run: s.run,
    assistantIndex,
    digest: s.digests[assistantIndex + 1],
    toolCallId: call.id,
    toolName: call.name,
    metadata: s.state.config.metadata ?? {},
  };
}

function toolInfo(s: Session, name: string): ToolInfo | undefined {
  return s.state.tools.find((t) => t.name === name);
}

function start(s: Session, call: ToolCall): void {
  s.events.emit({ type: 'tool_execution_start', toolCallId: call.id, toolName: call.name, args: call.arguments });
}

/** Settles one tool call: emits its `tool_execution_end` and builds its result message (appended later by `record`). */
function settleCall(s: Session, call: ToolCall, outcome: ToolOutcome): Finalised {
  s.events.emit({
    type: 'tool_execution_end',
    toolCallId: call.id,
    toolName: call.name,
    result: { content: outcome.content, details: outcome.details, ...(outcome.terminate ? { terminate: true } : {}) },
    isError: outcome.isError,
  });
  return { message: toolResultMessage(call, outcome), outcome };
}

function record(s: Session, f: Finalised): void {
  appendMessage(s, f.message);
}

/** A loop-generated failure, shaped as Pi shapes it: one text block, details `{}`, no terminate flag (docs/errors.md#tool-results-the-loop-writes). */
export function errorOutcome(text: string): ToolOutcome {
  return { content: [{ type: 'text', text }], details: {}, isError: true, timestamp: workflowNow() };
}
