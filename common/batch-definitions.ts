/**
 * What a client of `agentBatchWorkflow` sees (docs/architecture.md#batches): the workflow types, the input, the result
 * and the `progress` and `results` queries. Other languages use the names (workflow type `agentBatchWorkflow`, query
 * `progress`, query `results`). Sandbox-safe (types and definitions only): the batch workflow imports it too, and so
 * does the `keel/client` entry, which must not reach into workflows/. What only the workflows exchange (page holders,
 * child reports) is workflows/batch/definitions.ts.
 */
import { defineQuery } from '@temporalio/workflow';
import type { Static } from 'typebox';
import type { AGENT_BATCH_INPUT_SCHEMA, BATCH_PAGE_REF_SCHEMA } from './batch-input-schema.js';
import type { BudgetLine } from './budget.js';
import type { TreeBudgetLine } from './tree/budget.js';
import type { RunStatus } from './run.js';
import type { GradingSummary, VariantSummary } from './grading.js';
import type { PendingApproval } from './updates.js';

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
  /** With variants or `repeat`: the task's index in the input, its variant and attempt. */
  task?: number;
  variant?: string;
  repeat?: number;
  /** A graded task's verdict (`error`: the grader threw; not a task failure). */
  grade?: { pass: boolean; score: number; reason?: string; error?: string };
  /** Finished, its grading still running. */
  gradePending?: true;
  /**
   * A completed task's typed output (docs/runs.md#typed-results), when it has one: read from the child's result by
   * `AgentBatchHandle.results({ outputs: true })`; the `results` query itself does not carry it.
   */
  output?: unknown;
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
  /** A graded batch: pass rate, pass@k, mean score, cost per pass (README "Graded batches"). */
  grading?: GradingSummary;
  /** With variants: a line per variant. */
  variants?: VariantSummary[];
  /** With variants: the tasks (input indices, first 100) whose variants disagree (verdict, else status). */
  disagreements?: number[];
  /**
   * Calls the batch's tasks (and their sub-agents) wait for (from 0.6.0), each with the waiting run's `workflowId` and
   * `path` (`task <i>`, then the sub-agents' labels): decide them on that run (`keel approve <workflowId> <toolCallId>`).
   */
  pendingApprovals?: PendingApproval[];
}

/** `progress.budget`: each limit with what the finished tasks spent against it. */
export interface BatchBudgetProgress {
  lines: BudgetLine[];
  /** No further task starts; running ones were asked to stop. */
  spent: boolean;
  /**
   * A batch started since 0.6.0: each limit with what the tasks settled (graders included), what their model requests
   * in flight have reserved, and the limit (the tree budget, README "Budgets").
   */
  tree?: TreeBudgetLine[];
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
  /** Of `tokens`: input tokens the tasks read from / wrote to their providers' prompt caches (absent when none). */
  cacheRead?: number;
  cacheWrite?: number;
  continuedAsNew: number;
  /** The first failures (at most 100): read the full results from the children. */
  failures: { index: number; workflowId: string; status: RunStatus; error?: string }[];
  /** A graded batch: pass rate, pass@k, mean score, cost per pass. */
  grading?: GradingSummary;
  /** With variants: a line per variant. */
  variants?: VariantSummary[];
  /** With variants: the tasks whose variants disagree (first 100). */
  disagreements?: number[];
}

export const progressQuery = defineQuery<BatchProgress>('progress');
export const resultsQuery = defineQuery<
  { results: BatchTaskResult[]; total: number },
  [{ from?: number; limit?: number }?]
>('results');
