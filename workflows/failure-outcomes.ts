/**
 * The one failure→outcome mapper: how a failed Keel activity (a model call, a compaction, a tool preparation or
 * execution) or a failed child run of a batch becomes what the workflow records instead of an exception. Elsewhere in
 * workflows/ Temporal's failure classes are only passed on (a cancellation rethrown, a workflow bug wrapped in
 * workflows/agent/workflow.ts); every mapping of `ActivityFailure`, `ChildWorkflowFailure`, `ApplicationFailure` types,
 * `TimeoutFailure`, `TerminatedFailure` and cancellation to an outcome is here.
 *
 * Contract:
 * - Each function takes what an activity call (or `executeChild`) threw and returns plain data; none throws,
 *   schedules, waits or touches the session. The caller decides what to do with the result (docs/errors.md has every text).
 * - The text of a failure is the activity's own: the `ApplicationFailure` message a tool or provider threw, or
 *   Temporal's text for a timeout; a cancellation is `Operation aborted`.
 * - Deterministic: the only side effect is the `since(LOST_ATTEMPT_USAGE_PATCH)` check of {@link modelCallFailure},
 *   made exactly when the failure is a timeout (as before this module existed), so the command sequence is unchanged.
 */
import { TimeoutType, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ActivityFailure,
  ApplicationFailure,
  ChildWorkflowFailure,
  isCancellation,
  TerminatedFailure,
  TimeoutFailure,
} from '@temporalio/workflow';
import { heartbeatUsage } from '../common/events.js';
import {
  ErrorType,
  failureCarriesResult,
  OPERATION_ABORTED,
  thrownMessage,
  toolInterrupted,
} from '../common/errors.js';
import { usageProblem } from '../common/message-checks.js';
import type { Usage } from '../common/messages.js';
import type { AgentRunResult, RunStatus } from '../common/run.js';
import { bareOutcome, clipError as clip, outcomeOfResult, type TaskOutcome } from '../common/task-outcome.js';
import { since } from './since.js';

/** Guards counting the lost last attempt's streamed usage (its heartbeat's `partial.usage`) in the run's usage. */
export const LOST_ATTEMPT_USAGE_PATCH = 'keel-lost-attempt-usage';

/** A failed `callModel`: what the run records as the assistant's error message. */
export interface ModelCallFailure {
  /** The call was cancelled (interrupt, cancel): stopReason `aborted`, text `Operation aborted`. */
  aborted: boolean;
  /** The `errorMessage` of the recorded assistant message. */
  text: string;
  /** Usage the failed attempts reported, when it is well-formed (counted in the run's usage). */
  usage?: Usage;
  /** The activity refused the call because the run's budget is spent (`ErrorType.BudgetExceeded`). */
  budgetExceeded: boolean;
  /** The root of the run's tree refused the reservation (`ErrorType.TreeBudgetExceeded`): the text to stop with. */
  treeBudget?: string;
  /** The provider refused the context as too long (`ErrorType.ModelContextOverflow`): compact and call once more. */
  contextOverflow: boolean;
}

/**
 * A failed `callModel`. Usage comes from the provider failure's details (`{ usage }`) or, when the last attempt timed
 * out (a lost worker), from its last heartbeat (`{ failedUsage, partial }`).
 */
export function modelCallFailure(err: unknown): ModelCallFailure {
  const aborted = isCancellation(err);
  const reported = reportedUsage(err, true);
  return {
    aborted,
    text: aborted ? OPERATION_ABORTED : activityText(err),
    usage: reported && !usageProblem(reported) ? reported : undefined,
    budgetExceeded: applicationType(err) === ErrorType.BudgetExceeded,
    ...treeRefusal(err),
    contextOverflow: applicationType(err) === ErrorType.ModelContextOverflow,
  };
}

/** `{ treeBudget: <the root's text> }` when the failure is the tree root's refusal of a reservation. */
function treeRefusal(err: unknown): { treeBudget?: string } {
  if (applicationType(err) !== ErrorType.TreeBudgetExceeded) return {};
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? { treeBudget: cause.message } : {};
}

/** The failure types of a provider outage: what moves a request to the next of a run's `fallbackModels`. */
const PROVIDER_OUTAGES: ReadonlySet<string> = new Set([
  ErrorType.ModelServer,
  ErrorType.ModelTimeout,
  ErrorType.ModelNetwork,
]);

/**
 * A `callModel` that failed, after its retries, because its provider is down (5xx and overloaded/529, timeouts,
 * connection errors: `ModelError.Server`, `.Timeout`, `.Network`): the failure's type and text. Undefined for any other
 * failure (4xx, rate limits, content refusals, cancellations, a lost worker's activity timeout), which no fallback
 * model takes.
 */
export function providerOutage(err: unknown): { type: string; text: string } | undefined {
  if (isCancellation(err)) return undefined;
  const type = applicationType(err);
  return type !== undefined && PROVIDER_OUTAGES.has(type) ? { type, text: activityText(err) } : undefined;
}

/** A failed `compact` activity: the run goes on uncompacted, the `compaction` event carries `text`. */
export interface CompactionFailure {
  /** Usage in the failure's details (a failed summary request still costs). */
  usage?: Usage;
  budgetExceeded: boolean;
  treeBudget?: string;
  text: string;
}

export function compactionFailure(err: unknown): CompactionFailure {
  return {
    usage: reportedUsage(err, false),
    budgetExceeded: applicationType(err) === ErrorType.BudgetExceeded,
    ...treeRefusal(err),
    text: activityText(err),
  };
}

/**
 * The text of a tool call's error result when its activity failed: `Operation aborted` when cancelled; the interrupted
 * text when the activity was lost (timeout, worker gone: no `ApplicationFailure`) and the tool is not idempotent (it
 * ran at most once, its effect unknown); otherwise the failure's own message.
 */
export function toolCallFailureText(err: unknown, tool: { name: string; idempotent?: boolean }): string {
  if (isCancellation(err)) return OPERATION_ABORTED;
  if (err instanceof ActivityFailure && !(err.cause instanceof ApplicationFailure) && !tool.idempotent)
    return toolInterrupted(tool.name);
  return toolText(err);
}

/**
 * A worker-local tool call that its home worker never started (worker affinity: a schedule-to-start timeout on the
 * run's home queue): the run moves to a new home instead of recording a result.
 */
export function isHomeLost(err: unknown): boolean {
  return (
    err instanceof ActivityFailure &&
    err.cause instanceof TimeoutFailure &&
    err.cause.timeoutType === TimeoutType.SCHEDULE_TO_START
  );
}

/**
 * A worker-local tool call placed as a local activity that ran on a worker other than the run's home: refused before
 * anything ran (`KeelNotHome`, docs/local-tools.md), so it is scheduled as an activity on the home queue instead.
 */
export function isNotHome(err: unknown): boolean {
  // a local activity's failure may arrive unwrapped (the marker records the ApplicationFailure itself)
  const type = err instanceof ApplicationFailure ? err.type : applicationType(err);
  return type === ErrorType.NotHome;
}

/**
 * The error result of every call of a batch whose preparation activity failed; undefined when it was cancelled (the
 * calls then get `Operation aborted` from the batch itself).
 */
export function preparationFailureText(err: unknown): string | undefined {
  return isCancellation(err) ? undefined : toolText(err);
}

/** The `ApplicationFailure` type the activity threw, if it threw one. */
function applicationType(err: unknown): string | undefined {
  return err instanceof ActivityFailure && err.cause instanceof ApplicationFailure
    ? (err.cause.type ?? undefined)
    : undefined;
}

/** Model and compaction failures: the cause's message, else the error as a string. */
function activityText(err: unknown): string {
  return err instanceof ActivityFailure && err.cause ? err.cause.message : String(err);
}

/** Tool failures: the cause's message, else the error's message. */
function toolText(err: unknown): string {
  if (err instanceof ActivityFailure && err.cause) return err.cause.message;
  return thrownMessage(err);
}

/** Usage a failed model-side activity reported; `heartbeat`: also read a timed-out attempt's last heartbeat. */
function reportedUsage(err: unknown, heartbeat: boolean): Usage | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof ApplicationFailure) return (cause.details?.[0] as { usage?: Usage } | undefined)?.usage;
  if (heartbeat && cause instanceof TimeoutFailure) {
    const details = cause.lastHeartbeatDetails as { failedUsage?: Usage } | undefined;
    // 0.1.0 counted only `failedUsage`; the streamed usage of the lost last attempt is counted from this patch on
    return since(LOST_ATTEMPT_USAGE_PATCH) ? heartbeatUsage(details) : details?.failedUsage;
  }
  return undefined;
}

/**
 * The outcome of a batch's child run, from its result or from what `executeChild` threw: a failed run's own result
 * (`AgentRunFailed` details), `cancelled`, `terminated`, `timed out`, `<type>: <message>`, or `could not start: …`;
 * error texts clipped to 300 characters. Failures are recorded, never thrown.
 */
export function childRunOutcome(result: AgentRunResult | undefined, err: unknown): TaskOutcome {
  const fromResult = outcomeOfResult;
  const bare = bareOutcome;
  if (result) return fromResult(result);
  if (err instanceof WorkflowExecutionAlreadyStartedError) return bare('failed', `could not start: ${err.message}`);
  if (err instanceof ChildWorkflowFailure) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && failureCarriesResult(cause.type) && cause.details?.[0]) {
      return fromResult(cause.details[0] as AgentRunResult, 'failed');
    }
    if (isCancellation(cause)) return bare('cancelled', 'cancelled');
    if (cause instanceof TerminatedFailure) return bare('failed', 'terminated');
    if (cause instanceof TimeoutFailure) return bare('failed', 'timed out');
    return bare(
      'failed',
      cause instanceof ApplicationFailure && cause.type
        ? `${cause.type}: ${cause.message}`
        : (cause?.message ?? (err as Error).message),
    );
  }
  return bare('failed', thrownMessage(err));
}

/**
 * How a batch's child run closes, seen from inside it (its report to the batch, workflows/agent/report-to-batch.ts): from what its
 * session returned or threw. `result`: the run's own result (returned, or the details of `AgentRunFailed`); otherwise
 * `cancelled` for a cancellation, else `failed` with `<type>: <message>`. Error texts clipped to 300 characters.
 */
export function closingRunOutcome(
  result: AgentRunResult | undefined,
  err: unknown,
): { status: RunStatus; result?: AgentRunResult; error?: string } {
  if (result) return { status: result.status, result, ...(result.error ? { error: clip(result.error) } : {}) };
  if (err instanceof ApplicationFailure && failureCarriesResult(err.type) && err.details?.[0]) {
    const r = err.details[0] as AgentRunResult;
    return { status: 'failed', result: r, ...(r.error ? { error: clip(r.error) } : {}) };
  }
  if (isCancellation(err)) return { status: 'cancelled', error: 'cancelled' };
  const text =
    err instanceof ApplicationFailure && err.type
      ? `${err.type}: ${err.message}`
      : err instanceof Error
        ? err.message
        : String(err);
  return { status: 'failed', error: clip(text) };
}
