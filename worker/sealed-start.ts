/**
 * An encrypting worker's check that a run was started encrypted (README "Encryption"). Keel's codec passes clear
 * payloads through on decode, so that runs started before encryption was turned on keep working; a run started now by
 * a client without the key ring would therefore run with its prompt in clear text in history. `startRun` (once, at a
 * run's first start) asks this check, which reads the run's first history event raw (the workflow service: no codec)
 * and fails the run when its input is not sealed. Runs continued-as-new by Keel and batch children are started by the
 * worker itself (sealed), and runs started before never call `startRun` again. A batch's first start asks the same
 * through the `checkBatchStart` activity (since 0.6.2, workflows/batch/sealed-start.ts).
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { StorageDriverClaim, type ExternalStorage, type Payload } from '@temporalio/common';
import { decodeReferencePayload, isReferencePayload } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { isEncrypted, UNSEALED_START } from '../node-common/encryption.js';

export { UNSEALED_START };

/**
 * Whether the run's start input (its first argument, as the workflow service holds it) is sealed by Keel's codec. An
 * input offloaded to the payload store is judged by the stored object (fetched through `storage`'s driver of that
 * name; without one, accepted).
 */
export async function startInputSealed(
  client: Client,
  namespace: string,
  execution: { workflowId: string; runId?: string },
  storage: ExternalStorage | undefined,
): Promise<boolean> {
  const page = await client.workflowService.getWorkflowExecutionHistory({
    namespace,
    execution,
    maximumPageSize: 1,
  });
  const input = page.history?.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0] as
    Payload | undefined;
  if (!input) return true; // no input: nothing in clear
  if (isEncrypted(input)) return true;
  if (!isReferencePayload(input)) return false;
  const ref = decodeReferencePayload(input);
  const driver = storage?.drivers.find((d) => d.name === ref.driverName);
  if (!driver) return true;
  const [stored] = await driver.retrieve({}, [new StorageDriverClaim(ref.claimData)]);
  return stored !== undefined && isEncrypted(stored);
}

/** `unsealedStart` of the activities (activities/index.ts) for the current activity's run. */
export async function unsealedStartOfCurrentRun(storage: ExternalStorage | undefined): Promise<string | undefined> {
  const ctx = Context.current();
  const { workflowExecution, workflowNamespace } = ctx.info;
  if (!workflowExecution || !workflowNamespace) return undefined; // not a workflow's activity
  const sealed = await startInputSealed(ctx.client, workflowNamespace, workflowExecution, storage);
  return sealed ? undefined : UNSEALED_START;
}
