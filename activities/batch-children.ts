/**
 * The reconciliation of a sliding-window batch (workflows/batch-window.ts): which of its running children are in fact
 * closed — a child that was terminated, timed out or reset never reports — each with its compact outcome, read from
 * Temporal (describe, then the result or failure of a closed one). Children still running, or not found, are left out.
 */
import { WorkflowFailedError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../common/errors.js';
import type { AgentRunResult, RunStatus } from '../common/run.js';
import type { BatchTaskReport } from '../workflows/batch-definitions.js';

/** A closed child: its workflow id and outcome (error texts clipped to 300 characters). */
export type ClosedChild = Omit<BatchTaskReport, 'index'> & { workflowId: string };

const clip = (t: string) => (t.length > 300 ? `${t.slice(0, 299)}…` : t);

function fromResult(r: AgentRunResult, status: RunStatus, workflowId: string): ClosedChild {
  return {
    workflowId,
    status,
    turns: r.turns ?? 0,
    tokens: r.usage?.totalTokens ?? 0,
    cost: r.usage?.cost?.total ?? 0,
    modelCalls: r.modelCalls ?? 0,
    ...(r.error ? { error: clip(r.error) } : {}),
  };
}

const bare = (workflowId: string, status: RunStatus, error: string): ClosedChild => ({
  workflowId,
  status,
  turns: 0,
  tokens: 0,
  cost: 0,
  modelCalls: 0,
  error: clip(error),
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
      if (cause instanceof ApplicationFailure && cause.type === ErrorType.AgentRunFailed && cause.details?.[0])
        closed.push(fromResult(cause.details[0] as AgentRunResult, 'failed', workflowId));
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
