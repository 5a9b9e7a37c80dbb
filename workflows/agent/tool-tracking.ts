/**
 * Tracking a tool activity while it runs (docs/architecture.md#tool-calls): the running-tools list the details and the
 * `state` query show, and every failure turned into the call's error result, so a failure never escapes the batch.
 */
import type { ToolCall } from '../../common/messages.js';
import type { ToolOutcome } from '../../common/wire.js';
import { workflowNow } from '../clock.js';
import type { RunningTool } from './state.js';
import { isHomeLost, isNotHome, toolCallFailureText } from '../failure-outcomes.js';

/** What tracking needs of the session: the running-tools list it keeps, the details, the activity scope. */
export interface ToolTracking {
  /** Tool calls whose activity is running, by call id (read by the details and the `state` query). */
  readonly runningTools: Map<string, RunningTool>;
  /** Republishes the current details (not a command). */
  publishDetails(): void;
  /** Runs `fn` (which schedules an activity) in the session's activity scope, so an abort reaches it. */
  runCancellable<T>(fn: () => Promise<T>): Promise<T>;
}

/** `track` with `rehomable`: the home worker never started the call (workflows/agent/tool-placement.ts moves it). */
export const HOME_LOST = Symbol('home lost');

/**
 * Runs a tool activity listed as running; a failure becomes an error result (workflows/failure-outcomes.ts
 * `toolCallFailureText`, which says "not retried" unless the tool is `idempotent`).
 */
export function track<T>(
  t: ToolTracking,
  call: ToolCall,
  idempotent: boolean | undefined,
  fn: () => Promise<T>,
): Promise<T | ToolOutcome>;
/** `rehomable`: a home worker that never started the call gives HOME_LOST. */
export function track<T>(
  t: ToolTracking,
  call: ToolCall,
  idempotent: boolean | undefined,
  fn: () => Promise<T>,
  rehomable: boolean,
): Promise<T | ToolOutcome | typeof HOME_LOST>;
export function track<T>(
  t: ToolTracking,
  call: ToolCall,
  idempotent: boolean | undefined,
  fn: () => Promise<T>,
  rehomable = false,
): Promise<T | ToolOutcome | typeof HOME_LOST> {
  const lost = rehomable ? (err: unknown) => (isHomeLost(err) ? HOME_LOST : undefined) : undefined;
  return tracked(t, call, idempotent, fn, lost, (result) => result as T | ToolOutcome | typeof HOME_LOST);
}

/** `trackThen` of a call on the run's task queue: a worker with role `model` refused it (`KeelNotHome`), nothing ran. */
export const REFUSED_HERE = Symbol('refused here');

/**
 * `track`, then `after` with the call's result (its outcome, or its failure's error result) in the same `then`: the
 * next step of the batch without one more promise per call (each costs a stack trace in the SDK's promise hook).
 */
export function trackThen<T, R>(
  t: ToolTracking,
  call: ToolCall,
  idempotent: boolean | undefined,
  fn: () => Promise<T>,
  after: (result: T | ToolOutcome) => R | PromiseLike<R>,
): Promise<R>;
/** `refusable`: a refusal before anything ran (`KeelNotHome`) gives REFUSED_HERE. */
export function trackThen<T, R>(
  t: ToolTracking,
  call: ToolCall,
  idempotent: boolean | undefined,
  fn: () => Promise<T>,
  after: (result: T | ToolOutcome | typeof REFUSED_HERE) => R | PromiseLike<R>,
  refusable: true,
): Promise<R>;
export function trackThen<T, R>(
  t: ToolTracking,
  call: ToolCall,
  idempotent: boolean | undefined,
  fn: () => Promise<T>,
  after: (result: T | ToolOutcome | typeof REFUSED_HERE) => R | PromiseLike<R>,
  refusable = false,
): Promise<R> {
  const lost = refusable ? (err: unknown) => (isNotHome(err) ? REFUSED_HERE : undefined) : undefined;
  return tracked(t, call, idempotent, fn, lost, after as (result: T | ToolOutcome | symbol) => R | PromiseLike<R>);
}

/** Tracks the call; `lost`: the failures that are no result of the call but a sign for its placement (a symbol). */
function tracked<T, R>(
  t: ToolTracking,
  call: ToolCall,
  idempotent: boolean | undefined,
  fn: () => Promise<T>,
  lost: ((err: unknown) => symbol | undefined) | undefined,
  after: (result: T | ToolOutcome | symbol) => R | PromiseLike<R>,
): Promise<R> {
  t.runningTools.set(call.id, { toolName: call.name, since: workflowNow() });
  t.publishDetails();
  const settled = () => {
    t.runningTools.delete(call.id);
    t.publishDetails();
  };
  // one `then` instead of an async function awaiting: one promise fewer per tool call, settled in the same microtask
  return t.runCancellable(fn).then(
    (result) => {
      settled();
      return after(result);
    },
    (err: unknown) => {
      settled();
      const sign = lost?.(err);
      if (sign) return after(sign);
      return after(loopErrorOutcome(toolCallFailureText(err, { name: call.name, idempotent })));
    },
  );
}

/**
 * A loop-generated failure, shaped as Pi shapes it: one text block, details `{}`, no terminate flag
 * (docs/errors.md#tool-results-the-loop-writes).
 */
export function loopErrorOutcome(text: string): ToolOutcome {
  return { content: [{ type: 'text', text }], details: {}, isError: true, timestamp: workflowNow() };
}
