/** What every Update validator checks first: is the run still taking requests? And how a validator refuses. */
import { ApplicationFailure } from '@temporalio/workflow';
import type { RunStatus, SessionStatus } from '../../common/run.js';
import { ErrorType } from '../../common/errors.js';
import { runClosed, type UpdateName } from '../../common/updates.js';
import type { Session } from './session.js';

const FINAL: readonly SessionStatus[] = ['completed', 'stopped', 'cancelled', 'failed'];

export function isFinal(status: SessionStatus): status is RunStatus {
  return FINAL.includes(status);
}

/** Refuses an Update: the caller gets an `ApplicationFailure` of type `KeelUpdateRejected` with `message`. */
export function reject(message: string): never {
  throw ApplicationFailure.create({ type: ErrorType.UpdateRejected, message, nonRetryable: true });
}

/**
 * Why the run takes no more `update` requests (`is completed`, `is being cancelled`, `is ending`,
 * approve / deny: `is being interrupted`), or undefined. An idle
 * session whose last agent run failed shows `failed` but still takes messages: only a closing run (`s.closed`) refuses.
 */
export function closedWhy(s: Session, update: UpdateName): string | undefined {
  if (s.closed && isFinal(s.state.status)) return `is ${s.state.status}`;
  if (cancelling(s)) return update === 'cancel' ? undefined : 'is being cancelled';
  // an interrupt denies every pending call (`Operation aborted`): a decision arriving meanwhile would not be kept
  if (s.abort === 'interrupt' && (update === 'approve' || update === 'deny')) return 'is being interrupted';
  if (s.endRequested && (update === 'followUp' || update === 'steer')) return 'is ending (end was requested)';
  return undefined;
}

/**
 * The run is being cancelled: by the `cancel` signal or Update, or by Temporal cancellation, which is seen here within
 * the workflow task that brings it (the root scope is marked at once; `abort` is set only when the promises run).
 */
export function cancelling(s: Session): boolean {
  return s.abort === 'cancel' || s.workflowScope?.consideredCancelled === true;
}

/** Refuses `update` with `Cannot <action>: the run <why>` when the run takes no more requests of that kind. */
export function refuseIfClosed(s: Session, update: UpdateName): void {
  const why = closedWhy(s, update);
  if (why) reject(runClosed(update, why));
}
