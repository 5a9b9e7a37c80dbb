/**
 * A batch's check that it was started encrypted, on an encrypting worker (README "Encryption"; since 0.6.2,
 * `PATCH.sealedBatchStart`): the batch-side twin of the run's check inside `startRun` (worker/sealed-start.ts).
 */
import { ApplicationFailure } from '@temporalio/workflow';
import { ErrorType } from '../../common/errors.js';
import { batchActivities } from '../activities.js';
import { PATCH } from '../patches.js';
import { since } from '../since.js';

/**
 * A batch's first run on an encrypting worker fails at once when the batch was started without encryption (its task
 * list is in clear text in history), as `startRun` fails such a run: the `checkBatchStart` activity, before any task
 * starts. Asked once per batch, after every patch of its first workflow task (docs/versioning.md). Returns whether the
 * worker runs no local activity (it caches no workflow, 0.12.0: `BatchStartCheck`), so the tasks start not lean.
 */
export async function refuseUnsealedStart(): Promise<boolean> {
  if (!since(PATCH.sealedBatchStart)) return false;
  const check = await batchActivities.checkBatchStart.executeWithOptions({ summary: 'check batch start' }, []);
  if (typeof check !== 'string') return check?.noLocalActivities === true;
  throw ApplicationFailure.create({
    type: ErrorType.InvalidAgentBatchInput,
    message: `Invalid AgentBatchInput: ${check}`,
    nonRetryable: true,
    details: [[check]],
  });
}
