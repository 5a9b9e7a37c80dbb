/** The result lines of `keel batch`: each child's outcome, written in input order as tasks finish. */
import type { WorkflowHandle } from '@temporalio/client';
import type { AgentRunResult } from '../../common/run.js';
import { resultsQuery, type BatchTaskResult } from '../../common/batch-definitions.js';
import type { AgentClient } from '../../client/agent-client.js';
import { closedRunOutcome, withDeadline } from '../outcome.js';
import { slotChildId, type BatchShape } from '../../common/grading.js';

/** The `error` of a result line whose task never started (its batch closed first: cancelled, terminated). */
export const NEVER_STARTED = 'never started: the batch closed before this task began';

/**
 * One output line: the child's full AgentRunResult (or its failure), with its index (`index`, default the task's own)
 * and workflow id. A task of a closed batch that is still `queued` never started: its line says so (status `queued`,
 * error {@link NEVER_STARTED}) without looking for a child that does not exist.
 */
export async function resultLine(
  client: AgentClient,
  r: BatchTaskResult,
  withMessages: boolean,
  index = r.index,
): Promise<string> {
  const neverStarted = { status: r.status, result: { finalText: '', newMessages: [], turns: 0, error: NEVER_STARTED } };
  const out: {
    status: string;
    result: Omit<AgentRunResult, 'usage' | 'status'> & { usage?: AgentRunResult['usage'] };
    failureType?: string;
  } =
    r.status === 'queued'
      ? neverStarted
      : await closedRunOutcome(client.client.workflow.getHandle(r.workflowId), { stateTimeoutMs: 1000 }).catch(
          (err: Error) => ({
            status: r.status,
            result: { finalText: '', newMessages: [], turns: r.turns ?? 0, error: r.error ?? err.message },
          }),
        );
  const { newMessages, ...rest } = out.result;
  return JSON.stringify({
    index,
    workflowId: r.workflowId,
    ...(r.task !== undefined ? { task: r.task } : {}),
    ...(r.variant !== undefined ? { variant: r.variant } : {}),
    ...(r.repeat !== undefined ? { repeat: r.repeat } : {}),
    ...(r.grade ? { grade: r.grade } : {}),
    ...rest,
    status: out.status,
    ...(out.failureType ? { failureType: out.failureType } : {}),
    ...(withMessages ? { newMessages } : {}),
  });
}

/**
 * Writes result lines in input order as tasks finish: polls the `results` query from the first unwritten index and
 * reads finished children's results (a few at a time).
 */
export class OrderedWriter {
  next = 0;
  private pending = new Map<number, Promise<string>>();

  constructor(
    private readonly client: AgentClient,
    private readonly write: (line: string) => void,
    private readonly withMessages: boolean,
    private readonly parallel = 16,
  ) {}

  async pump(handle: WorkflowHandle, total: number): Promise<void> {
    if (this.next >= total) return;
    let page: { results: BatchTaskResult[] } | undefined;
    try {
      page = await withDeadline(handle, 10_000, () => handle.query(resultsQuery, { from: this.next, limit: 256 }));
    } catch {
      return; // no worker answers right now: try on the next tick
    }
    for (const r of page.results) {
      if (r.status === 'running' || r.status === 'queued' || r.gradePending) break;
      if (this.pending.size >= this.parallel) break;
      if (!this.pending.has(r.index)) this.pending.set(r.index, resultLine(this.client, r, this.withMessages));
    }
    await this.flush();
  }

  /**
   * After the batch closed every child is final: read the rest from the `results` query (grades, variants) and the
   * children; when no worker answers the query, straight from the children of `shape` (no grades then).
   */
  async finish(batchId: string, total: number, handle?: WorkflowHandle, shape: BatchShape = {}): Promise<void> {
    while (this.next < total) {
      const page = handle
        ? await withDeadline(handle, 10_000, () =>
            handle.query(resultsQuery, { from: this.next, limit: this.parallel }),
          ).catch(() => undefined)
        : undefined;
      for (let i = this.next; i < Math.min(total, this.next + this.parallel); i++) {
        const r = page?.results.find((x) => x.index === i) ?? {
          index: i,
          workflowId: slotChildId(batchId, shape, i),
          status: 'failed' as const,
        };
        if (!this.pending.has(i)) this.pending.set(i, resultLine(this.client, r, this.withMessages));
      }
      await this.flush();
    }
  }

  private async flush(): Promise<void> {
    while (this.pending.has(this.next)) {
      const line = await this.pending.get(this.next)!;
      this.pending.delete(this.next);
      this.write(line);
      this.next += 1;
    }
  }
}
