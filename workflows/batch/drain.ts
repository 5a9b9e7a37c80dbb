/**
 * The 0.3.0 batch loop, its commands unchanged, for batches that started on 0.3.0 (their histories replay it: `patched(
 * PATCH.slidingWindowBatch)` is false for them). Children run as awaited `executeChild`s; before its history grows
 * large the batch stops launching, DRAINS its running children, and continues-as-new carrying counters and one
 * compact outcome per task. The new run (on a worker with the patch) takes the sliding window (workflows/batch/window.ts),
 * converting this state. New batches never run this code.
 */
import { runSummary } from '../../common/run-summary.js';
import {
  CancellationScope,
  condition,
  continueAsNew,
  executeChild,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { childRunOutcome } from '../failure-outcomes.js';
import type { AgentRunInput, AgentRunResult } from '../../common/run.js';
import {
  progressQuery,
  resultsQuery,
  type AgentBatchInput,
  type AgentBatchResult,
  type BatchProgress,
} from './definitions.js';
import { BatchBudget, type BatchBudgetCarried } from './budget.js';
import {
  batchDetails,
  batchProgress,
  batchResult,
  countOutcome,
  assertBatchInput,
  DEFAULT_CONCURRENCY,
  historyFull,
  notStarted,
  resultsPage,
  STATUS_CODES,
} from './input.js';
import { BatchTasks } from './tasks.js';

/** Failed tasks whose error text the batch keeps in its compact outcomes (about 300 KB at most). */
const MAX_ERRORS_KEPT = 1000;

/** One finished task: [status code (index in STATUS_CODES), turns, tokens, cost, error?]. */
export type CompactOutcome = [number, number, number, number] | [number, number, number, number, string];

/** What 0.3.0 carried across continue-as-new: counters and the compact outcomes, not the tasks nor the results. */
export interface BatchCarried extends Omit<AgentBatchResult, 'total'>, BatchBudgetCarried {
  next: number;
  outcomes: (CompactOutcome | null)[];
}

export async function runDrainingBatch(input: AgentBatchInput, carried?: BatchCarried): Promise<AgentBatchResult> {
  assertBatchInput(input);
  const info = workflowInfo();
  const batchId = info.workflowId;
  const concurrency = input.concurrency ?? DEFAULT_CONCURRENCY;
  const st: BatchCarried = carried ?? emptyCarried();
  const tasks = new BatchTasks(input, batchId, concurrency, () => st.next);
  const total = tasks.total;
  const budget = new BatchBudget(input.budget, st);
  const running = new Set<number>();
  let draining = false;
  let finishedHere = 0;
  let startedHere = 0;

  const progress = (): BatchProgress =>
    batchProgress(st, {
      total,
      running: running.size,
      concurrency,
      phase: st.done + st.failed >= total ? 'finished' : draining ? 'draining' : 'running',
      ...budget.progress(),
    });
  const publish = () => setCurrentDetails(batchDetails(progress(), batchId, budget.details()));

  registerQueries(progress, st, total, batchId, running);

  // --- children -------------------------------------------------------------------------------------------------------
  const record = (i: number, result: AgentRunResult | undefined, err: unknown) => {
    const o = childRunOutcome(result, err);
    const code = STATUS_CODES.indexOf(o.status);
    // error texts only for the first failures, so the carried outcomes stay ~20 bytes a task (the child has the rest)
    const keepError = o.error && st.failed < MAX_ERRORS_KEPT;
    st.outcomes[i] = keepError ? [code, o.turns, o.tokens, o.cost, o.error!] : [code, o.turns, o.tokens, o.cost];
    countOutcome(st, i, `${batchId}-${i}`, o);
    finishedHere += 1;
    running.delete(i);
    budget.recorded(
      o.modelCalls ?? 0,
      [...running].map((k) => `${batchId}-${k}`),
    );
  };
  const launch = (i: number, task: AgentRunInput) => {
    running.add(i);
    startChild(input, batchId, i, task, budget.taskInput(task), total)
      .then(
        (r) => record(i, r, undefined),
        (err) => record(i, undefined, err),
      )
      .finally(() => {
        running.delete(i);
        publish();
      });
  };
  const shouldContinueAsNew = (): boolean => historyFull(input, startedHere);

  try {
    publish();
    for (;;) {
      while (!draining && running.size < concurrency && st.next < total) {
        const spent = budget.reached();
        if (spent) {
          // the pool is spent: the remaining tasks are not started
          const error = budget.text(spent);
          for (; st.next < total; st.next++) record(st.next, notStarted(error), undefined);
          break;
        }
        const i = st.next;
        const task = await tasks.taskAt(i);
        st.next = i + 1;
        if (task === undefined) {
          record(i, undefined, new Error(`task ${i} could not be read from its page holder ${tasks.holderOf(i)}`));
          continue;
        }
        launch(i, task);
        startedHere += 1;
        if (shouldContinueAsNew()) draining = true;
      }
      publish();
      if (st.next >= total && running.size === 0) break;
      if (draining && running.size === 0) {
        st.continuedAsNew += 1;
        return await continueAsNew<typeof runDrainingBatch>(input, st);
      }
      const seen = finishedHere;
      await condition(() => finishedHere !== seen);
      if (!draining && st.next < total && shouldContinueAsNew()) draining = true;
    }
  } finally {
    if (st.done + st.failed >= total || CancellationScope.current().consideredCancelled) {
      await CancellationScope.nonCancellable(async () => {
        await tasks.release();
      });
    }
  }
  publish();
  return batchResult(total, st);
}

function emptyCarried(): BatchCarried {
  return {
    next: 0,
    done: 0,
    failed: 0,
    byStatus: {},
    tokens: 0,
    cost: 0,
    continuedAsNew: 0,
    outcomes: [],
    failures: [],
  };
}

/** The batch's `progress` and `results` queries (no command). */
function registerQueries(
  progress: () => BatchProgress,
  st: BatchCarried,
  total: number,
  batchId: string,
  running: ReadonlySet<number>,
): void {
  setHandler(progressQuery, progress, {
    description: 'Batch progress: total, done, failed, running, queued, tokens, cost.',
  });
  setHandler(
    resultsQuery,
    (opts) =>
      resultsPage(opts, total, {
        workflowId: (i) => `${batchId}-${i}`,
        outcome: (i) => st.outcomes[i],
        error: (i) => st.outcomes[i]?.[4],
        running: (i) => running.has(i),
      }),
    {
      description:
        'Compact per-task outcomes { from = 0, limit = 1000 } → { results: [{ index, workflowId, status, turns, tokens, cost, error? }], total }; full results are the children’s.',
    },
  );
}

/** Starts task `i` as the child run `<batchId>-<i>` with `args` (the task's input as the budget passes it on). */
function startChild(
  input: AgentBatchInput,
  batchId: string,
  i: number,
  task: AgentRunInput,
  args: AgentRunInput,
  total: number,
): Promise<AgentRunResult> {
  return executeChild<(input: AgentRunInput) => Promise<AgentRunResult>>('agentWorkflow', {
    workflowId: `${batchId}-${i}`,
    args: [args],
    ...(input.taskQueue ? { taskQueue: input.taskQueue } : {}),
    staticSummary: runSummary(task, `#${i}`),
    staticDetails: `batch ${batchId} · task ${i} of ${total} · model ${task.model}`,
  });
}
