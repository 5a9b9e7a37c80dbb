/**
 * Input, result, signals and queries of `agentBatchWorkflow` (docs/architecture.md#batches): a durable fan-out of many agent runs.
 * The client imports these definitions; other languages use the names (workflow type `agentBatchWorkflow`, query
 * `progress`, query `results`).
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { TaskOutcome } from '../../common/task-outcome.js';
import type { Static } from 'typebox';
import type { AGENT_BATCH_INPUT_SCHEMA, BATCH_PAGE_REF_SCHEMA } from '../../common/batch-input-schema.js';
import type { AgentRunInput, RunStatus } from '../../common/run.js';
import type { BatchBudgetProgress } from './budget.js';

export const BATCH_WORKFLOW_TYPE = 'agentBatchWorkflow';
/** The workflow type of a page holder (`{ taskPage }`); 0.3.0 clients started page holders as `agentBatchWorkflow`. */
export const BATCH_PAGE_WORKFLOW_TYPE = 'agentBatchPageWorkflow';

/**
 * A reference to tasks too large for one payload: each page is held by an `agentBatchWorkflow` execution started with
 * `{ taskPage: [...] }` (≤ ~1 MB each), which hands slices of it to the batch by signal on request.
 */
export type BatchPageRef = Static<typeof BATCH_PAGE_REF_SCHEMA>;

/** The argument of `agentBatchWorkflow`: the type of `AGENT_BATCH_INPUT_SCHEMA` (common/batch-input-schema.ts). */
export type AgentBatchInput = Static<typeof AGENT_BATCH_INPUT_SCHEMA>;

/** A page holder: serves one page of a big batch's tasks. */
export interface BatchPageHolderInput {
  taskPage: AgentRunInput[];
  /** Complete after this long without requests. Default 30 days. */
  idleTimeout?: string;
}

/** Outcome of one task, kept in the batch (compact: the full result is the child's own). */
export type BatchTaskStatus = RunStatus | 'running' | 'queued';

export interface BatchTaskResult {
  index: number;
  /** `<batchId>-<index>`: read the full AgentRunResult from it. */
  workflowId: string;
  status: BatchTaskStatus;
  turns?: number;
  tokens?: number;
  cost?: number;
  error?: string;
}

/** Answer of the `progress` query. `done + failed + running + queued = total`; `done + failed` never decreases. */
export interface BatchProgress {
  total: number;
  /** Finished completed or stopped. */
  done: number;
  /** Finished failed or cancelled (or could not start). */
  failed: number;
  running: number;
  queued: number;
  tokens: number;
  cost: number;
  /** Continue-as-new count so far. */
  continuedAsNew: number;
  concurrency: number;
  /** `draining`: a batch started on 0.3.0 waiting for its running children before continuing-as-new (never now). */
  phase: 'running' | 'draining' | 'finished';
  /** With a batch budget: spent/limit per limit (spent by finished tasks). */
  budget?: BatchBudgetProgress;
}

/** What `agentBatchWorkflow` returns. */
export interface AgentBatchResult {
  total: number;
  done: number;
  failed: number;
  /** By status: completed, stopped, failed, cancelled. */
  byStatus: Partial<Record<RunStatus, number>>;
  tokens: number;
  cost: number;
  continuedAsNew: number;
  /** The first failures (at most 100): read the full results from the children. */
  failures: { index: number; workflowId: string; status: RunStatus; error?: string }[];
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
}

/**
 * Child → batch: task `index` closed, with its compact outcome (error clipped to 300 characters: the child's result
 * has the whole text). Recorded once per index (a duplicate report is ignored).
 */
export type BatchTaskReport = TaskOutcome & { index: number };

export const progressQuery = defineQuery<BatchProgress>('progress');
export const resultsQuery = defineQuery<
  { results: BatchTaskResult[]; total: number },
  [{ from?: number; limit?: number }?]
>('results');
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
