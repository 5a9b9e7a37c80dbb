/** Starting `agentBatchWorkflow` (with page holders for big lists) and reading its `progress` query. */
import type { WorkflowHandle } from '@temporalio/client';
import type { AgentRunInput } from '../../../common/run.js';
import { BATCH_WORKFLOW_TYPE, progressQuery, type AgentBatchInput, type BatchPageRef, type BatchProgress } from '../../../workflows/batch-definitions.js';
import type { AgentClient } from '../../agent-client.js';
import { withDeadline } from '../outcome.js';
import { batchIdFor, INLINE_MAX_CHARS, paginate } from './tasks.js';

export interface StartBatchOptions {
  batchId?: string;
  concurrency?: number;
  /** Task queue of the children (default: the batch's). */
  childTaskQueue?: string;
  /** Force the page-reference form with this many tasks per page. */
  pageSize?: number;
  continueAsNewAfterTasks?: number;
  continueAsNewAfterEvents?: number;
  summary?: string;
}

/** Starts `agentBatchWorkflow` (and its page holders when the list is big). */
export async function startBatch(client: AgentClient, taskQueue: string, tasks: AgentRunInput[], o: StartBatchOptions = {}): Promise<WorkflowHandle> {
  const batchId = o.batchId ?? batchIdFor(tasks);
  let ref: AgentRunInput[] | BatchPageRef = tasks;
  if (o.pageSize !== undefined || JSON.stringify(tasks).length > INLINE_MAX_CHARS) {
    const pages = paginate(tasks, o.pageSize);
    ref = { pages: [] };
    for (const [n, taskPage] of pages.entries()) {
      const workflowId = `${batchId}-page-${n}`;
      await client.client.workflow.start(BATCH_WORKFLOW_TYPE, {
        taskQueue,
        workflowId,
        args: [{ taskPage }],
        staticSummary: `task page ${n} of batch ${batchId} (${taskPage.length} tasks)`,
      });
      ref.pages.push({ workflowId, count: taskPage.length });
    }
  }
  const input: AgentBatchInput = {
    tasks: ref,
    ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
    ...(o.childTaskQueue ? { taskQueue: o.childTaskQueue } : {}),
    ...(o.continueAsNewAfterTasks !== undefined ? { continueAsNewAfterTasks: o.continueAsNewAfterTasks } : {}),
    ...(o.continueAsNewAfterEvents !== undefined ? { continueAsNewAfterEvents: o.continueAsNewAfterEvents } : {}),
  };
  return client.client.workflow.start(BATCH_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: batchId,
    args: [input],
    staticSummary: o.summary ?? `batch of ${tasks.length} agent runs`,
    staticDetails: `children: ${batchId}-<index> · concurrency ${o.concurrency ?? 8}`,
  });
}

export async function batchProgress(handle: WorkflowHandle): Promise<BatchProgress | undefined> {
  try {
    return await withDeadline(handle, 5000, () => handle.query(progressQuery));
  } catch {
    return undefined;
  }
}

