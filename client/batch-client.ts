/**
 * The typed batch API for services (README "A run API for other services"): start `agentBatchWorkflow` over many
 * `AgentRunInput`s, read its progress and per-task outcomes while it runs, and each task's full result from its child
 * run. `AgentClient.startBatch` / `AgentClient.getBatch` return an {@link AgentBatchHandle}; the `keel batch` command
 * is built on the same functions.
 */
import { randomUUID } from 'node:crypto';
import {
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
  type Client,
  type WorkflowHandle,
} from '@temporalio/client';
import type { Budget } from '../common/budget.js';
import type { AgentRunInput, AgentRunResult } from '../common/run.js';
import { BUILTIN_GRADERS, childIdPattern, childTask, type BatchTask, type BatchVariant } from '../common/grading.js';
import { agentRunInputErrors } from '../common/validate-input.js';
import {
  BATCH_PAGE_WORKFLOW_TYPE,
  BATCH_WORKFLOW_TYPE,
  progressQuery,
  resultsQuery,
  type AgentBatchInput,
  type AgentBatchResult,
  type BatchPageRef,
  type BatchProgress,
  type BatchTaskResult,
} from '../common/batch-definitions.js';

/** Inline task lists above this many JSON characters go by page reference (one payload must stay under 2 MB). */
export const INLINE_MAX_CHARS = 1_000_000;
const PAGE_MAX_CHARS = 900_000;
/** Splits tasks into pages of at most `pageSize` tasks (or PAGE_MAX_CHARS characters). */
export function paginate(tasks: AgentRunInput[], pageSize?: number): AgentRunInput[][] {
  const pages: AgentRunInput[][] = [];
  let page: AgentRunInput[] = [];
  let chars = 0;
  for (const t of tasks) {
    const size = JSON.stringify(t).length;
    if (page.length > 0 && ((pageSize !== undefined && page.length >= pageSize) || chars + size > PAGE_MAX_CHARS)) {
      pages.push(page);
      page = [];
      chars = 0;
    }
    page.push(t);
    chars += size;
  }
  if (page.length) pages.push(page);
  return pages;
}

export interface StartBatchOptions {
  batchId?: string;
  concurrency?: number;
  /** Task queue of the children (default: the batch's). */
  childTaskQueue?: string;
  /** Force the page-reference form with this many tasks per page. */
  pageSize?: number;
  continueAsNewAfterTasks?: number;
  continueAsNewAfterEvents?: number;
  /** One budget for the whole batch (README "Budgets"). */
  budget?: Budget;
  summary?: string;
  /** Runs of each task (per variant), for pass@k (README "Graded batches"). */
  repeat?: number;
  /** Each task runs once per variant: children `<batchId>-<variant>-<index>`. */
  variants?: BatchVariant[];
  /** Heartbeat timeout of the grading activity in seconds (default 30). */
  graderHeartbeatSeconds?: number;
  /** The batch workflow's memo (e.g. `keelRetryOf` of a retry, `keelSchedule`). */
  memo?: Record<string, unknown>;
  /** Further fields of the batch input, as they are (the options above take precedence); a retry passes the first batch's. */
  inputFields?: Omit<AgentBatchInput, 'tasks'>;
}

/** The input of `agentBatchWorkflow` for these tasks (inline or by page reference) and options. */
export function batchInput(tasks: AgentRunInput[] | BatchPageRef, o: StartBatchOptions): AgentBatchInput {
  return {
    ...o.inputFields,
    tasks,
    ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
    ...(o.childTaskQueue ? { taskQueue: o.childTaskQueue } : {}),
    ...(o.continueAsNewAfterTasks !== undefined ? { continueAsNewAfterTasks: o.continueAsNewAfterTasks } : {}),
    ...(o.continueAsNewAfterEvents !== undefined ? { continueAsNewAfterEvents: o.continueAsNewAfterEvents } : {}),
    ...(o.budget ? { budget: o.budget } : {}),
    ...(o.repeat !== undefined && o.repeat > 1 ? { repeat: o.repeat } : {}),
    ...(o.variants?.length ? { variants: o.variants } : {}),
    ...(o.graderHeartbeatSeconds !== undefined ? { graderHeartbeatSeconds: o.graderHeartbeatSeconds } : {}),
  };
}

/** A task of a batch with `variants` that leaves its `model` to them (every variant must name one). */
export type VariantTask = Omit<AgentRunInput, 'model'> & { model?: string };

/**
 * What is wrong with one batch task: an `AgentRunInput` that may also carry the batch's `expected` and `grader`
 * (README "Graded batches"; taken off before its run starts), one line per problem. Empty when it is fine. With
 * `variants` the task is checked as each variant's child gets it (the variant's `model`, `systemPrompt`, `maxTurns`
 * applied), so a task may leave out what every variant sets — a `model` — and a problem only some variants have is
 * named with them (`(variant b)`).
 */
export function batchTaskErrors(task: unknown, variants?: readonly BatchVariant[]): string[] {
  if (!task || typeof task !== 'object' || Array.isArray(task)) return agentRunInputErrors(task);
  const { expected: _expected, grader, ...run } = task as Record<string, unknown>;
  const graderErrors =
    grader !== undefined && (typeof grader !== 'string' || !grader)
      ? [`grader: must be a grader name (${BUILTIN_GRADERS.join(', ')}, or one the worker registers)`]
      : [];
  if (!variants?.length) return [...graderErrors, ...agentRunInputErrors(run)];
  // each variant's child: one line per problem, with the variants that have it unless all do
  const byError = new Map<string, string[]>();
  for (const v of variants)
    for (const e of agentRunInputErrors(childTask(run as unknown as BatchTask, v)))
      byError.set(e, [...(byError.get(e) ?? []), v.name]);
  const runErrors = [...byError].map(([e, names]) =>
    names.length === variants.length ? e : `${e} (variant ${names.join(', ')})`,
  );
  return [...graderErrors, ...runErrors];
}

/**
 * Starts `agentBatchWorkflow` (and its page holders, `agentBatchPageWorkflow`s, when the list is big) on `taskQueue`;
 * the tasks are not validated here. A batch id names one batch: an id a workflow already has, running or closed, is
 * refused with `WorkflowExecutionAlreadyStartedError` (a second batch under it would mix its retries and results with
 * the first's), before any page holder starts.
 */
export async function startBatchWorkflow(
  client: Client,
  taskQueue: string,
  tasks: AgentRunInput[],
  o: StartBatchOptions = {},
): Promise<WorkflowHandle> {
  const batchId = o.batchId ?? `keel-batch-${randomUUID()}`;
  let ref: AgentRunInput[] | BatchPageRef = tasks;
  if (o.pageSize !== undefined || JSON.stringify(tasks).length > INLINE_MAX_CHARS) {
    await refuseTakenId(client, batchId);
    const pages = paginate(tasks, o.pageSize);
    ref = { pages: [] };
    for (const [n, taskPage] of pages.entries()) {
      const workflowId = `${batchId}-page-${n}`;
      await client.workflow.start(BATCH_PAGE_WORKFLOW_TYPE, {
        taskQueue,
        workflowId,
        args: [{ taskPage }],
        staticSummary: `task page ${n} of batch ${batchId} (${taskPage.length} tasks)`,
      });
      ref.pages.push({ workflowId, count: taskPage.length });
    }
  }
  const input = batchInput(ref, o);
  return client.workflow.start(BATCH_WORKFLOW_TYPE, {
    taskQueue,
    workflowId: batchId,
    args: [input],
    staticSummary: o.summary ?? `batch of ${tasks.length} agent runs`,
    staticDetails: `children: ${childIdPattern(batchId, input)} · concurrency ${input.concurrency ?? 8}`,
    ...(o.memo ? { memo: o.memo } : {}),
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
  });
}

/** Rejects with `WorkflowExecutionAlreadyStartedError` when a workflow (running or closed) has the id `batchId`. */
async function refuseTakenId(client: Client, batchId: string): Promise<void> {
  const taken = await client.workflow
    .getHandle(batchId)
    .describe()
    .then(
      () => true,
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return false;
        throw err;
      },
    );
  if (taken)
    throw new WorkflowExecutionAlreadyStartedError(
      `Workflow execution already started: ${batchId}`,
      batchId,
      BATCH_WORKFLOW_TYPE,
    );
}

/** One batch: its progress, its compact per-task outcomes, its summary, and each task's own run. */
export class AgentBatchHandle<Run = unknown> {
  constructor(
    readonly workflow: WorkflowHandle,
    private readonly runHandle: (workflowId: string) => Run,
  ) {}

  get workflowId(): string {
    return this.workflow.workflowId;
  }

  /** done / failed / running / queued, tokens, cost (the `progress` query; needs a worker). */
  progress(): Promise<BatchProgress> {
    return this.workflow.query(progressQuery);
  }

  /**
   * Outcomes of tasks [from, from + limit), in input order (the `results` query): status, turns, tokens, cost, error.
   * `outputs`: each completed task's typed `output` too, read from its child's result (one history read per task).
   */
  async results(
    opts: { from?: number; limit?: number; outputs?: boolean } = {},
  ): Promise<{ results: BatchTaskResult[]; total: number }> {
    const { outputs, ...range } = opts;
    const page = await this.workflow.query(resultsQuery, range);
    if (!outputs) return page;
    return { ...page, results: await Promise.all(page.results.map((r) => this.withOutput(r))) };
  }

  private async withOutput(r: BatchTaskResult): Promise<BatchTaskResult> {
    if (r.status !== 'completed') return r;
    const result = (await this.workflow.client.getHandle(r.workflowId).result()) as AgentRunResult;
    return result.output === undefined ? r : { ...r, output: result.output };
  }

  /** Waits for the batch to finish: totals, by status, the first failures. */
  async result(): Promise<AgentBatchResult> {
    return (await this.workflow.result()) as AgentBatchResult;
  }

  /**
   * The run of task `index` (child workflow `<batchId>-<index>`): its state, transcript and full result. With variants
   * or `repeat` the children are `<batchId>-<variant>-<index>-r<j>`: take `workflowId` from {@link results}.
   */
  task(index: number): Run {
    return this.runHandle(`${this.workflowId}-${index}`);
  }
}
