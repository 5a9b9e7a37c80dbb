/**
 * What the batch's workflows exchange among themselves (docs/architecture.md#batches): page holders, and a child's
 * report of how it closed. What a client sees (input, result, `progress` and `results`) is
 * common/batch-definitions.ts, re-exported here for the batch's own files.
 */
import { defineSignal } from '@temporalio/workflow';
import type { TaskOutcome } from '../../common/task-outcome.js';
import type { AgentRunInput } from '../../common/run.js';

export {
  BATCH_PAGE_WORKFLOW_TYPE,
  BATCH_WORKFLOW_TYPE,
  progressQuery,
  resultsQuery,
  type AgentBatchInput,
  type AgentBatchResult,
  type BatchBudgetProgress,
  type BatchPageRef,
  type BatchProgress,
  type BatchTaskResult,
  type BatchTaskStatus,
} from '../../common/batch-definitions.js';

/** A page holder: serves one page of a big batch's tasks. */
export interface BatchPageHolderInput {
  taskPage: AgentRunInput[];
  /** Complete after this long without requests. Default 30 days. */
  idleTimeout?: string;
}

export interface BatchPageRequest {
  replyTo: string;
  page: number;
  from: number;
  limit: number;
}

export interface BatchPageReply {
  page: number;
  from: number;
  tasks: AgentRunInput[];
}

/**
 * The memo (key `keelBatch`) a batch sets on each child it starts. A child still running when the run of the batch
 * that started it continues-as-new is asked ({@link reportBySignalSignal}) to report its outcome to `workflowId` with
 * {@link taskFinishedSignal} as it closes; the others' outcomes reach that run as their completion events. Carried by
 * the child across its own continues-as-new.
 */
export const BATCH_MEMO_KEY = 'keelBatch';
export interface BatchMembership {
  /** The batch's workflow id (signals go to its current run). */
  workflowId: string;
  index: number;
  /** The batch keeps a tree-budget ledger: the task's model requests reserve from it (common/tree-budget.ts). */
  treeBudget?: true;
}

/**
 * Child → batch: task `index` closed, with its compact outcome (error clipped to 300 characters: the child's result
 * has the whole text). Recorded once per index (a duplicate report is ignored).
 */
export type BatchTaskReport = TaskOutcome & { index: number };

/** Batch → page holder: send me tasks [from, from + limit) of your page. */
export const pageRequestSignal = defineSignal<[BatchPageRequest]>('pageRequest');
/** Page holder → batch: the requested slice. */
export const pageReplySignal = defineSignal<[BatchPageReply]>('pageReply');
/** Batch → page holder: the batch is finished; complete. */
export const pageReleaseSignal = defineSignal<[]>('pageRelease');
/** Child → batch: its compact outcome, sent as the child closes whatever its status (once asked to). */
export const taskFinishedSignal = defineSignal<[BatchTaskReport]>('keelBatchTaskFinished');
/**
 * Batch → child, before the batch's run continues-as-new: the run that started you is ending, so report how you
 * close by {@link taskFinishedSignal} (your completion event would reach a closed run).
 */
export const reportBySignalSignal = defineSignal<[]>('keelBatchReportBySignal');
