/**
 * Re-running what failed (issue 27 item 3): a new batch of just the tasks of a finished batch that ended with the
 * given statuses, linked to it, and the merged view of a batch and its retries (each task's latest outcome).
 *
 * The link: retry `k` of batch `B` is the batch `B-retry-k`, and carries the memo `keelRetryOf` ({@link
 * BatchRetryMemo}: B and, for each of its tasks, the index it had in B). B is closed when it is retried, and a closed
 * workflow's memo and search attributes cannot change, so B cannot record its retries itself; a search attribute on
 * the retry would have to be registered on every namespace first. The id is the link instead: whoever holds B finds
 * its retries by describing `B-retry-1`, `B-retry-2`, … until one does not exist (strongly consistent, unlike a
 * visibility query), and the retry names B in its memo.
 */
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import type { Budget } from '../common/budget.js';
import type { AgentRunInput, RunStatus } from '../common/run.js';
import {
  resultsQuery,
  type AgentBatchInput,
  type BatchTaskResult,
  type BatchTaskStatus,
} from '../common/batch-definitions.js';
import { startBatchWorkflow, type StartBatchOptions } from './batch-client.js';

/** The memo key of a retry batch. */
export const RETRY_MEMO_KEY = 'keelRetryOf';

/** The memo `keelRetryOf` of a retry batch: the batch it retries, and the index in that batch of each of its tasks. */
export interface BatchRetryMemo {
  /** The workflow id of the batch retried (the first one, also for a second retry). */
  retryOf: string;
  /** `indices[i]` = the index in `retryOf` of this batch's task `i`. */
  indices: number[];
}

/** The workflow id of retry `k` (1, 2, …) of `batchId`. */
export const retryBatchId = (batchId: string, k: number): string => `${batchId}-retry-${k}`;

/** An outcome a retry selects by: a run's status, or `queued` for a task its closed batch never started. */
export type RetryStatus = RunStatus | 'queued';

/**
 * The default of {@link RetryBatchOptions.statuses}: every task without a result — failed, cancelled, and never started
 * (`queued` in a batch that closed first, e.g. cancelled), so a retry after a cancel re-runs all the work left.
 */
export const DEFAULT_RETRY_STATUSES: readonly RetryStatus[] = ['failed', 'cancelled', 'queued'];

/** `failed, cancelled or never started`: statuses as a reader says them (`queued` is `never started`). */
export function statusPhrase(statuses: readonly RetryStatus[]): string {
  const words = statuses.map((s) => (s === 'queued' ? 'never started' : s));
  return words.length > 1 ? `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}` : words.join('');
}

/** What a retry is started with. */
export interface RetryBatchOptions {
  /** Retry the tasks whose latest outcome is one of these (default {@link DEFAULT_RETRY_STATUSES}). */
  statuses?: readonly RetryStatus[];
  /** Default: the first batch's. Every other field of the first batch's input (task queue, continue-as-new thresholds, …) is kept. */
  concurrency?: number;
  /** Default: the first batch's budget, as a fresh pool for the retry. */
  budget?: Budget;
}

/** One retry of a batch, as found by its id. */
export interface BatchRetry {
  workflowId: string;
  /** Temporal's status of the retry batch, lower case (`running`, `completed`, …). */
  status: string;
  memo: BatchRetryMemo;
}

/** The first payload argument of the latest run of `workflowId` (a batch carries its input unchanged across continue-as-new). */
async function inputOf<T>(client: Client, workflowId: string): Promise<T> {
  const page = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId },
    maximumPageSize: 1,
  });
  const started = page.history?.events?.[0]?.workflowExecutionStartedEventAttributes;
  const [input] = await decodeArrayFromPayloads(client.options.loadedDataConverter, started?.input?.payloads);
  return input as T;
}

/**
 * The input a batch was started with and its task list, in input order. Tasks handed over by page reference are read
 * from the page holders' own inputs (their histories keep them after the batch released them).
 */
export async function batchInputOf(
  client: Client,
  batchId: string,
): Promise<{ input: AgentBatchInput; tasks: AgentRunInput[] }> {
  const input = await inputOf<AgentBatchInput>(client, batchId);
  if (Array.isArray(input.tasks)) return { input, tasks: input.tasks };
  const tasks: AgentRunInput[] = [];
  for (const page of input.tasks.pages)
    tasks.push(...(await inputOf<{ taskPage: AgentRunInput[] }>(client, page.workflowId)).taskPage);
  return { input, tasks };
}

/**
 * Every outcome of a batch, in input order (the `results` query, paged). Needs a worker: rejects with BatchRetryError
 * saying so when none answers within 10 s.
 */
export async function batchOutcomes(handle: WorkflowHandle): Promise<BatchTaskResult[]> {
  const out: BatchTaskResult[] = [];
  for (;;) {
    const page = await handle.client.connection
      .withDeadline(Date.now() + 10_000, () => handle.query(resultsQuery, { from: out.length, limit: 1000 }))
      .catch((err: unknown) => {
        const e = err as { code?: number; cause?: { code?: number }; message?: string };
        if (e.code === 4 || e.cause?.code === 4 || /deadline/i.test(e.message ?? ''))
          throw new BatchRetryError(
            `No worker answered the results query of ${handle.workflowId} within 10 s: start a worker on the batch's task queue and try again.`,
          );
        throw err;
      });
    out.push(...page.results);
    if (page.results.length === 0 || out.length >= page.total) return out;
  }
}

/** The retries of `batchId`, oldest first: `B-retry-1`, `B-retry-2`, … as long as they exist. */
export async function retriesOf(client: Client, batchId: string): Promise<BatchRetry[]> {
  const out: BatchRetry[] = [];
  for (let k = 1; ; k++) {
    const workflowId = retryBatchId(batchId, k);
    try {
      const d = await client.workflow.getHandle(workflowId).describe();
      out.push({ workflowId, status: d.status.name.toLowerCase(), memo: d.memo?.[RETRY_MEMO_KEY] as BatchRetryMemo });
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return out;
      throw err;
    }
  }
}

/** Task `index` of the first batch as its latest run left it: the run's workflow id and outcome. */
export interface MergedOutcome extends BatchTaskResult {
  /** The batch whose child holds this outcome (the first batch, or the retry that ran the task last). */
  batchId: string;
}

/**
 * The outcome of each task of `batchId` in input order, the latest retry's replacing the earlier ones (`index` is the
 * task's index in `batchId`; `workflowId` the child that ran it last). Refuses while the batch or a retry runs.
 */
export async function mergedOutcomes(
  client: Client,
  batchId: string,
): Promise<{ outcomes: MergedOutcome[]; retries: BatchRetry[] }> {
  const first = client.workflow.getHandle(batchId);
  const d = await first.describe();
  const memo = d.memo?.[RETRY_MEMO_KEY] as BatchRetryMemo | undefined;
  if (memo)
    throw new BatchRetryError(`${batchId} is a retry of ${memo.retryOf}: give the first batch, ${memo.retryOf}.`);
  if (d.status.name === 'RUNNING') throw new BatchRetryError(`Batch ${batchId} is still running.`);
  const outcomes: MergedOutcome[] = (await batchOutcomes(first)).map((r) => ({ ...r, batchId }));
  const retries = await retriesOf(client, batchId);
  for (const retry of retries) {
    if (retry.status === 'running') throw new BatchRetryError(`Its retry ${retry.workflowId} is still running.`);
    const results = await batchOutcomes(client.workflow.getHandle(retry.workflowId));
    for (const r of results) {
      const index = retry.memo.indices[r.index];
      outcomes[index] = { ...r, index, batchId: retry.workflowId };
    }
  }
  return { outcomes, retries };
}

/** A retry or merge refused: the batch is running, is itself a retry, or has nothing to retry. */
export class BatchRetryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BatchRetryError';
  }
}

/**
 * Starts `B-retry-<k>` (the next free k) with the tasks of `batchId` whose latest outcome (over B and its earlier
 * retries) has one of `statuses` (default: every task without a result, never-started ones included), with the same task definitions and, unless overridden, B's concurrency, task queue,
 * budget (a fresh pool) and continue-as-new thresholds, and the memo {@link BatchRetryMemo}. Rejects with
 * `BatchRetryError` while B or a retry runs, for a retry given as B, and when no task has those statuses.
 */
export async function startRetryBatch(
  client: Client,
  batchId: string,
  o: RetryBatchOptions = {},
): Promise<{ handle: WorkflowHandle; memo: BatchRetryMemo }> {
  const statuses = o.statuses ?? DEFAULT_RETRY_STATUSES;
  const { outcomes, retries } = await mergedOutcomes(client, batchId);
  const indices = outcomes
    .filter((r) => (statuses as readonly BatchTaskStatus[]).includes(r.status))
    .map((r) => r.index);
  if (indices.length === 0)
    throw new BatchRetryError(`Nothing to retry: no task of ${batchId} is ${statusPhrase(statuses)}.`);
  const { input, tasks } = await batchInputOf(client, batchId);
  const taskQueue = (await client.workflow.getHandle(batchId).describe()).taskQueue;
  const workflowId = retryBatchId(batchId, retries.length + 1);
  const memo: BatchRetryMemo = { retryOf: batchId, indices };
  const { tasks: _tasks, ...inputFields } = input;
  const options: StartBatchOptions = {
    batchId: workflowId,
    inputFields,
    ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
    ...(o.budget ? { budget: o.budget } : {}),
    summary: `retry of ${indices.length} ${statusPhrase(statuses)} task(s) of batch ${batchId}`,
    memo: { [RETRY_MEMO_KEY]: memo },
  };
  const handle = await startBatchWorkflow(
    client,
    taskQueue,
    indices.map((i) => tasks[i]),
    options,
  );
  return { handle, memo };
}
