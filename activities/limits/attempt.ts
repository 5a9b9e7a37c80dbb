/** How a failed model request attempt ends its provider-limits reservation (activities/model/call-model.ts). */
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../../common/errors.js';
import { emptyUsage, type Usage } from '../../common/messages.js';
import type { ModelErrorDetails } from '../model/classify-error.js';
import type { AttemptLimits } from './gate.js';

/**
 * The attempt failed with `err`: a provider's 429, or 5xx such as 529, that asked to `retry-after` holds back every
 * request of the key that long (the limiter's back-off); the reservation is settled with the attempt's usage when the
 * provider was called (granted), released when it was not.
 */
export async function limitedAttemptEnd(limits: AttemptLimits, err: unknown, usage: Usage | undefined): Promise<void> {
  const details = err instanceof ApplicationFailure ? (err.details?.[0] as ModelErrorDetails | undefined) : undefined;
  const asked = typeof details?.retryAfterMs === 'number' && details.retryAfterMs > 0 ? details.retryAfterMs : 0;
  const overloaded =
    err instanceof ApplicationFailure && (err.type === ErrorType.ModelRateLimit || err.type === ErrorType.ModelServer);
  if (overloaded && asked > 0 && limits.holds) await limits.backoff(asked);
  await limits.end(limits.holds ? (usage ?? emptyUsage()) : undefined, limits.holds);
}
