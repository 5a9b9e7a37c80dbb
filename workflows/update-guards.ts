/** What every Update validator checks first: is the run still taking requests? And how a validator refuses. */
import { ApplicationFailure } from '@temporalio/workflow';
import type { RunStatus, SessionStatus } from '../common/run.js';
import { runClosed, UPDATE_REJECTED, type UpdateName } from '../common/updates.js';
import type { Session } from './session.js';

const FINAL: readonly SessionStatus[] = ['completed', 'stopped', 'cancelled', 'failed'];

export function isFinal(status: SessionStatus): status is RunStatus {
  return FINAL.includes(status);
}

/** Refuses an Update: the caller gets an `ApplicationFailure` of type `KeelUpdateRejected` with `message`. */
export function reject(message: string): never {
  throw ApplicationFailure.create({ type: UPDATE_REJECTED, message, nonRetryable: true });
}

/**
 * Why the run takes no more `update` requests (`is completed`, `is being cancelled`, `is ending`), or undefined. An idle
 * session whose last agent run failed shows `failed` but still takes messages: only a closing run (`s.closed`) refuses.
 */
export function closedWhy(s: Session, update: UpdateName): string | undefined {
  if (s.closed && isFinal(s.state.status)) return `is ${s.state.status}`;
  if (s.abort === 'cancel') return update === 'cancel' ? undefined : 'is being cancelled';
  if (s.endRequested && (update === 'followUp' || update === 'steer')) return 'is ending (end was requested)';
  return undefined;
}

/** Refuses `update` with `Cannot <action>: the run <why>` when the run takes no more requests of that kind. */
export function refuseIfClosed(s: Session, update: UpdateName): void {
  const why = closedWhy(s, update);
  if (why) reject(runClosed(update, why));
}
