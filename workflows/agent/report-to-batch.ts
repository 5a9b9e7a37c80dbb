/**
 * A batch's child reporting its outcome (the sliding-window batch, workflows/batch/window.ts). The batch starts each child with
 * the memo `keelBatch: { workflowId, index }`. A child the batch asks to (`keelBatchReportBySignal`: the run that
 * started it is about to continue-as-new) signals `keelBatchTaskFinished` with its compact outcome to the batch's
 * workflow id (whichever run of the batch is current) as it closes — completed, stopped, failed or cancelled; the
 * request is carried across the child's own continues-as-new. Any other child's outcome reaches the batch as its
 * completion event, so most children send nothing. A run without that memo (a plain run, or a child of a 0.3.0 batch)
 * has no such handler and calls no `patched`. The signal is a new command of `agentWorkflow`, behind
 * `since(PATCH.slidingWindowBatch)`.
 */
import {
  CancellationScope,
  getExternalWorkflowHandle,
  isCancellation,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgentRunResult } from '../../common/run.js';
import { batchMembership, reportBySignalSignal, taskFinishedSignal, type BatchTaskReport } from '../batch-protocol.js';
import { closingRunOutcome } from '../failure-outcomes.js';
import { PATCH } from '../patches.js';
import type { SessionState } from './state.js';
import { since } from '../since.js';

/** What the report to a batch reads of the carried state: whether it was asked for, and the usage and turns. */
export type BatchReportState = Pick<SessionState, 'reportToBatch' | 'usage' | 'turns' | 'modelCalls'>;

/** A batch's child answers the batch's request to report by signal (nothing for a run outside a batch). */
export function registerBatchReportHandler(state: BatchReportState): void {
  const m = batchMembership();
  if (!m) return;
  if (m.reportBySignal) state.reportToBatch = true; // started after its batch's cut (0.8.0): asked from the start
  setHandler(reportBySignalSignal, () => void (state.reportToBatch = true), {
    description: 'From this run’s batch: report how this run closes by signal (the batch continues-as-new).',
  });
}

/**
 * Reports how this run closes to its batch, when the batch asked for it (registerBatchReportHandler): what `session` returned (`result`) or threw (`err`); usage and turns from
 * the result, else from the session's state (a cancelled run). Never throws: a batch that is gone is not told.
 */
export async function reportToBatch(
  result: AgentRunResult | undefined,
  err: unknown,
  state: BatchReportState | undefined,
): Promise<void> {
  const m = batchMembership();
  // a task started lean (0.12.0) has the sliding-window report without asking its patch
  if (!m || !state?.reportToBatch || !(m.leanStart === true || since(PATCH.slidingWindowBatch))) return;
  const o = closingRunOutcome(result, err);
  const r = o.result;
  const usage = r?.usage ?? state?.usage;
  const report: BatchTaskReport = {
    index: m.index,
    status: o.status,
    turns: r?.turns ?? state?.turns ?? 0,
    tokens: usage?.totalTokens ?? 0,
    cost: usage?.cost?.total ?? 0,
    modelCalls: r?.modelCalls ?? state?.modelCalls ?? 0,
    ...(o.error ? { error: o.error } : {}),
  };
  // a cancelled run still reports: outside its cancelled scope
  await CancellationScope.nonCancellable(() =>
    getExternalWorkflowHandle(m.workflowId)
      .signal(taskFinishedSignal, report)
      .catch((e: unknown) => {
        if (isCancellation(e)) throw e;
        // the batch is closed (finished, cancelled or terminated): nobody to tell
      }),
  );
}
