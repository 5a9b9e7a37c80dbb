/**
 * Both ends of a fork's link (issue 37 item 2): a fork names its original in its memo (`keelForkedFrom`); the original's
 * forks are found by a visibility query on the forks' search attribute `KeelForkedFrom`, so nothing is written to the
 * original (its history stays as it was).
 */
import type { WorkflowClient, WorkflowExecutionInfo } from '@temporalio/client';
import { forkMemoOf } from '../../common/fork.js';

export { forkMemoOf };

/** The visibility query of a run's forks (`temporal workflow list --query` and the Web UI take it as is). */
export function forksQuery(workflowId: string): string {
  return `KeelForkedFrom = "${workflowId.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

/** One fork of a run, as visibility lists it. */
export interface ListedFork {
  workflowId: string;
  atTurn: number;
  /** Temporal's status, lower case (`running`, `completed`, …). */
  status: string;
  startTime: Date;
}

/**
 * The forks of `workflowId`, newest first, by the visibility query {@link forksQuery} (visibility is eventually
 * consistent: a fork started a moment ago may be missing). Empty when the namespace lacks `KeelForkedFrom`.
 */
export async function listForks(client: WorkflowClient, workflowId: string, limit = 100): Promise<ListedFork[]> {
  const out: ListedFork[] = [];
  for await (const w of client.list({ query: forksQuery(workflowId), pageSize: Math.min(limit, 1000) })) {
    out.push(listedFork(w));
    if (out.length >= limit) break;
  }
  return out;
}

function listedFork(w: WorkflowExecutionInfo): ListedFork {
  return {
    workflowId: w.workflowId,
    atTurn: forkMemoOf(w.memo)?.atTurn ?? -1,
    status: w.status.name.toLowerCase(),
    startTime: w.startTime,
  };
}
