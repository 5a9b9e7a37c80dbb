/**
 * `agentBatchWorkflow`: many agent runs as child `agentWorkflow`s (ids `<batchId>-<index>`), at most `concurrency`
 * at a time (docs/architecture.md#batches). Durable like any workflow: a worker restart replays it and the running
 * children carry on. A child's failure is recorded, never fatal. Queries: `progress`, `results`.
 *
 * Since 0.4.0 a batch is a sliding window (workflows/batch/window.ts): children report to the batch by signal and keep running
 * across its continue-as-new. A batch run whose history predates `PATCH.slidingWindowBatch` (started on 0.3.0)
 * replays the 0.3.0 loop (workflows/batch/drain.ts), which drains before continuing-as-new; its next run takes the window.
 *
 * Tasks come inline, or — for lists too big for one payload — as a page reference: each page is held by an
 * `agentBatchPageWorkflow` (workflows/batch/page-holder.ts). `agentBatchWorkflow({ taskPage })` still holds a page, for holders
 * started by 0.3.0 clients.
 */

import type { AgentBatchInput, AgentBatchResult, BatchPageHolderInput } from './definitions.js';
import { runDrainingBatch, type BatchCarried } from './drain.js';
import { holdPage } from './page-holder.js';
import { runWindowBatch, type WindowCarried } from './window.js';
import { PATCH } from '../patches.js';
import { since } from '../since.js';

export type { BatchCarried, WindowCarried };

/** A batch (`AgentBatchInput` → `AgentBatchResult`), or a 0.3.0-style page holder (`{ taskPage }`). */
export async function agentBatchWorkflow(
  input: AgentBatchInput | BatchPageHolderInput,
  carried?: WindowCarried | BatchCarried,
): Promise<AgentBatchResult | { released: boolean }> {
  if (input && typeof input === 'object' && 'taskPage' in input) return holdPage(input);
  // checked once per run, first: a 0.3.0 history replays its own loop unchanged (since() asks 0.13.0's marker first)
  if (since(PATCH.slidingWindowBatch)) return runWindowBatch(input as AgentBatchInput, carried);
  return runDrainingBatch(input as AgentBatchInput, carried as BatchCarried | undefined);
}

/** A page holder: serves one page of a big batch's tasks to the batch by signal until released. */
export async function agentBatchPageWorkflow(input: BatchPageHolderInput): Promise<{ released: boolean }> {
  return holdPage(input);
}
