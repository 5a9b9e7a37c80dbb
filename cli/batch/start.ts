/** Starting `agentBatchWorkflow` (with page holders for big lists) and reading its `progress` query. */
import type { WorkflowHandle } from '@temporalio/client';
import type { AgentRunInput } from '../../common/run.js';
import { progressQuery, type BatchProgress } from '../../common/batch-definitions.js';
import { startBatchWorkflow, type StartBatchOptions } from '../../client/batch-client.js';
import type { AgentClient } from '../../client/agent-client.js';
import { withDeadline } from '../outcome.js';
import { batchIdFor } from './tasks.js';

export type { StartBatchOptions };

/** Starts `agentBatchWorkflow` (and its page holders when the list is big); the id derives from the tasks by default. */
export async function startBatch(
  client: AgentClient,
  taskQueue: string,
  tasks: AgentRunInput[],
  o: StartBatchOptions = {},
): Promise<WorkflowHandle> {
  return startBatchWorkflow(client.client, taskQueue, tasks, {
    ...o,
    batchId: o.batchId ?? batchIdFor(tasks, { variants: o.variants, repeat: o.repeat }),
  });
}

export async function batchProgress(handle: WorkflowHandle): Promise<BatchProgress | undefined> {
  try {
    return await withDeadline(handle, 5000, () => handle.query(progressQuery));
  } catch {
    return undefined;
  }
}
