/**
 * The reconciliation of a sliding-window batch (workflows/batch/window.ts): which of its running children are in fact
 * closed — a child that was terminated, timed out or reset never reports — each with its compact outcome, read from
 * Temporal (describe, then the result or failure of a closed one). Children still running, or not found, are left out.
 */
import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { carriedResult } from '../node-common/run-result.js';
import type { AgentRunResult, RunStatus } from '../common/run.js';
import { bareOutcome, outcomeOfResult, type TaskOutcome } from '../common/task-outcome.js';

/** A closed child: its workflow id and outcome (error texts clipped to 300 characters). */
export type ClosedChild = TaskOutcome & { workflowId: string };

const fromResult = (r: AgentRunResult, status: RunStatus, workflowId: string): ClosedChild => ({
  workflowId,
  ...outcomeOfResult(r, status),
});
const bare = (workflowId: string, status: RunStatus, error: string): ClosedChild => ({
  workflowId,
  ...bareOutcome(status, error),
});

/** The closed ones among `workflowIds` (the latest run of each id), with their outcomes. */
export async function closedChildren(client: Client, workflowIds: string[]): Promise<ClosedChild[]> {
  const closed: ClosedChild[] = [];
  for (const workflowId of workflowIds) {
    const handle = client.workflow.getHandle(workflowId);
    let status: string | undefined;
    try {
      status = (await handle.describe()).status.name;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) continue;
      throw err;
    }
    if (status === 'RUNNING' || status === 'CONTINUED_AS_NEW') continue;
    if (status === 'TERMINATED') closed.push(bare(workflowId, 'failed', 'terminated'));
    else if (status === 'TIMED_OUT') closed.push(bare(workflowId, 'failed', 'timed out'));
    else if (status === 'CANCELLED') closed.push(bare(workflowId, 'cancelled', 'cancelled'));
    else if (status === 'COMPLETED') {
      const r = (await handle.result()) as AgentRunResult;
      closed.push(fromResult(r, r.status, workflowId));
    } else {
      const err = await handle.result().then(
        () => undefined,
        (e: unknown) => e,
      );
      const cause = err instanceof WorkflowFailedError ? err.cause : undefined;
      const carried = carriedResult(err);
      if (carried) closed.push(fromResult(carried, 'failed', workflowId));
      else
        closed.push(
          bare(
            workflowId,
            'failed',
            cause instanceof ApplicationFailure && cause.type
              ? `${cause.type}: ${cause.message}`
              : (cause?.message ?? String(err)),
          ),
        );
    }
  }
  return closed;
}
