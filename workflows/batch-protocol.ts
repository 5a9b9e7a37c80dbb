/**
 * The protocol between a sliding-window batch (workflows/batch/) and its children (agent runs, workflows/agent/): the
 * memo a batch sets on each child, what a child reports as it closes, and the two signals. Both sides import this
 * file and nothing of each other.
 */
import { defineSignal, workflowInfo } from '@temporalio/workflow';
import type { TaskOutcome } from '../common/task-outcome.js';

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
  /** The batch keeps a tree-budget ledger: the task's model requests reserve from it (common/tree/budget.ts). */
  treeBudget?: true;
  /**
   * From 0.8.0: report how this run closes by signal from the start, as if asked by `keelBatchReportBySignal` (the
   * batch started it after deciding to continue-as-new, workflows/batch/window.ts).
   */
  reportBySignal?: true;
  /**
   * From 0.12.0 (`keel-0.12-lean-batch-tasks`): the task starts lean — its input checked in a local activity, the
   * visibility and sliding-window patches implied (no markers; workflows/agent/features.ts).
   */
  leanStart?: true;
}

/**
 * Child → batch: task `index` closed, with its compact outcome (error clipped to 300 characters: the child's result
 * has the whole text). Recorded once per index (a duplicate report is ignored).
 */
export type BatchTaskReport = TaskOutcome & { index: number };

/** Child → batch: its compact outcome, sent as the child closes whatever its status (once asked to). */
export const taskFinishedSignal = defineSignal<[BatchTaskReport]>('keelBatchTaskFinished');
/**
 * Batch → child, before the batch's run continues-as-new: the run that started you is ending, so report how you
 * close by {@link taskFinishedSignal} (your completion event would reach a closed run).
 */
export const reportBySignalSignal = defineSignal<[]>('keelBatchReportBySignal');

/** The batch this run belongs to, from its memo (undefined for a run not started by a sliding-window batch). */
export function batchMembership(): BatchMembership | undefined {
  const m = workflowInfo().memo?.[BATCH_MEMO_KEY] as Partial<BatchMembership> | undefined;
  return m && typeof m.workflowId === 'string' && Number.isInteger(m.index)
    ? {
        workflowId: m.workflowId,
        index: m.index as number,
        ...(m.treeBudget === true ? { treeBudget: true } : {}),
        ...(m.reportBySignal === true ? { reportBySignal: true } : {}),
        ...(m.leanStart === true ? { leanStart: true } : {}),
      }
    : undefined;
}

/** The memo to carry across this run's continue-as-new (`{}` for a run outside a batch: nothing changes). */
export function batchMemo(): { memo?: Record<string, unknown> } {
  const m = batchMembership();
  return m ? { memo: { [BATCH_MEMO_KEY]: m } } : {};
}
