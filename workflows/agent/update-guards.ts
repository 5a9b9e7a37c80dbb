/** What every Update validator checks first: is the run still taking requests? And how a validator refuses. */
import { ApplicationFailure } from '@temporalio/workflow';
import type { RunStatus, SessionStatus } from '../../common/run.js';
import { ErrorType } from '../../common/errors.js';
import type { UpdateName } from '../../common/updates.js';
import type { AbortKind, SessionState } from './state.js';

const FINAL: readonly SessionStatus[] = ['completed', 'stopped', 'cancelled', 'failed'];

export function isFinal(status: SessionStatus): status is RunStatus {
  return FINAL.includes(status);
}

/** Refuses an Update: the caller gets an `ApplicationFailure` of type `KeelUpdateRejected` with `message`. */
export function reject(message: string): never {
  throw ApplicationFailure.create({ type: ErrorType.UpdateRejected, message, nonRetryable: true });
}

/** What the guard reads of the session. */
export interface Guarded {
  /** The workflow is closing with its final status. */
  readonly closed: boolean;
  readonly state: Pick<SessionState, 'status'>;
  readonly abort?: AbortKind;
  /** `end` was received: complete once idle. */
  readonly endRequested: boolean;
  /** A `cancel` or Temporal cancellation is under way. */
  readonly cancelling: boolean;
}

/**
 * Why the run takes no more `update` requests (`is completed`, `is being cancelled`, `is ending`,
 * approve / deny: `is being interrupted`), or undefined. An idle
 * session whose last agent run failed shows `failed` but still takes messages: only a closing run (`closed`) refuses.
 */
export function closedWhy(s: Guarded, update: UpdateName): string | undefined {
  if (s.closed && isFinal(s.state.status)) return `is ${s.state.status}`;
  if (s.cancelling) return update === 'cancel' ? undefined : 'is being cancelled';
  // an interrupt denies every pending call (`Operation aborted`): a decision arriving meanwhile would not be kept
  if (s.abort === 'interrupt' && (update === 'approve' || update === 'deny')) return 'is being interrupted';
  if (s.endRequested && (update === 'followUp' || update === 'steer')) return 'is ending (end was requested)';
  return undefined;
}
