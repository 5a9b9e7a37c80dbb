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

/** Batch → page holder: send me tasks [from, from + limit) of your page. */
export const pageRequestSignal = defineSignal<[BatchPageRequest]>('pageRequest');
/** Page holder → batch: the requested slice. */
export const pageReplySignal = defineSignal<[BatchPageReply]>('pageReply');
/** Batch → page holder: the batch is finished; complete. */
export const pageReleaseSignal = defineSignal<[]>('pageRelease');
