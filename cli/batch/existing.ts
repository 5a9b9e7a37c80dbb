/**
 * What `keel batch <tasks>` does when its batch id is taken (issue 33 items 17 and 20). A batch id names one batch: a
 * second batch is never started under it (its retries, results and describe would mix the two). The same tasks again
 * (the id derived from them) re-attach to their batch while it runs or when it succeeded; a batch that ended with
 * failures, was cancelled or terminated, and any batch an explicit `--id` names, are refused (exit 2) with the
 * commands that go on from there: follow it, read its results, retry what has no result, or give another `--id`.
 */
import { WorkflowNotFoundError, type WorkflowExecutionDescription } from '@temporalio/client';
import type { Command } from 'commander';
import { BATCH_WORKFLOW_TYPE, type AgentBatchResult } from '../../common/batch-definitions.js';
import type { AgentClient } from '../../client/agent-client.js';
import { usageError } from '../context.js';
import { temporalStatus } from '../outcome.js';
import { countsText, progressCounts } from './progress.js';
import { batchProgress } from './start.js';

/** A workflow that already has the batch's id: its type, status, and for a batch that closed, its counts. */
export interface PriorBatch {
  id: string;
  type: string;
  /** `running`, `completed`, `cancelled`, `terminated`, … */
  status: string;
  /** Completed with no failed task: the only closed batch `keel batch` re-attaches to. */
  succeeded: boolean;
  /** `0/12 done · 12 failed` (from its result, or its `progress` query when it closed otherwise and a worker answers). */
  counts?: string;
}

/** The workflow with this id, if there is one (running or closed). */
export async function priorBatch(client: AgentClient, id: string): Promise<PriorBatch | undefined> {
  const handle = client.client.workflow.getHandle(id);
  let d: WorkflowExecutionDescription;
  try {
    d = await handle.describe();
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
  const status = temporalStatus(d);
  const prior: PriorBatch = { id, type: d.type, status, succeeded: false };
  if (d.type !== BATCH_WORKFLOW_TYPE || status === 'running') return prior;
  if (status === 'completed') {
    const r = (await handle.result()) as AgentBatchResult;
    prior.succeeded = r.failed === 0;
    prior.counts = countsText({ total: r.total, done: r.done, failed: r.failed, neverStarted: 0, running: 0 });
  } else {
    const p = await batchProgress(handle);
    if (p) prior.counts = countsText(progressCounts(p));
  }
  return prior;
}

/**
 * Whether to attach to `prior` (true), or the refusal (a usage error) that says what to do instead. `derived`: the id
 * came from the tasks (no `--id`). `paste` turns `keel` arguments into a pasteable command line; `resume` is the
 * command that follows the batch with this invocation's output options.
 */
export function attachOrRefuse(
  prior: PriorBatch,
  derived: boolean,
  paste: (args: string[]) => string,
  resume: string,
): true {
  const { id } = prior;
  if (prior.type !== BATCH_WORKFLOW_TYPE)
    throw usageError(`${id} is a ${prior.type}, not a batch. Give another --id to run the tasks.`);
  if (derived && (prior.status === 'running' || prior.succeeded)) return true;
  if (prior.status === 'running')
    throw usageError(
      `Batch ${id} already exists. Follow it with: ${resume}\nOr give another --id to run the tasks again.`,
    );
  const ran = `Batch ${id} already ran (${prior.status}${prior.counts ? `: ${prior.counts}` : ''}); a batch id names one batch, so it is not started again.`;
  const next = prior.succeeded
    ? `Its results: ${paste(['batch', 'results', id, '--out', 'results.jsonl'])}`
    : `Run the tasks without a result again: ${paste(['batch', 'retry', id])}`;
  throw usageError(`${ran}\n${next}\nOr give ${derived ? '' : 'another '}--id <new id> to run all the tasks again.`);
}
