/**
 * The sliding-window batch (from 0.4.0, `patched(PATCH.slidingWindowBatch)`): at most `concurrency` child
 * `agentWorkflow`s `<batchId>-<index>` run at once, started with `ParentClosePolicy.ABANDON` and the memo
 * `keelBatch: { workflowId, index }`. A child's outcome reaches the run that started it as its completion event; before
 * that run continues-as-new it asks the children it started and that are still running (`keelBatchReportBySignal`,
 * a handful: at most `concurrency`) to report by signal instead (`keelBatchTaskFinished`, workflows/agent/report-to-batch.ts) to the
 * batch's workflow id. So a child keeps running — and reports to the batch's next run — across the batch's
 * continue-as-new, which never waits for children, and only the children that outlive their run send a signal.
 *
 * Contract:
 * - An outcome is recorded once per task index: a duplicate report, or one for a task never started, is ignored.
 *   A child that cannot be asked to report has closed: the run waits (a minute at most) for its completion event.
 *   A child that could not start is recorded failed at once.
 * - Reconciliation: when nothing was reported for `reconcileAfterSeconds` (default 300), the activity
 *   `closedBatchChildren` describes the running children and the closed ones are recorded (a child of an earlier run
 *   that was terminated or timed out never reports).
 * - Continue-as-new carries the window (indices started and not reported), the counters, the first 100 failures,
 *   every outcome packed into a string and a bounded set of error texts (workflows/batch/outcomes.ts): under 1 MB at 50,000
 *   tasks.
 * - Cancelling the batch cancels its running children explicitly (ABANDON children are not cancelled by the server).
 * - The batch budget (workflows/batch/budget.ts) works as before: spent by reported outcomes.
 * - A state carried by a 0.3.0 run (workflows/batch/drain.ts) is converted: it drained, so nothing is running.
 */
import {
  CancellationScope,
  ChildWorkflowCancellationType,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  isCancellation,
  ParentClosePolicy,
  setCurrentDetails,
  setHandler,
  sleep,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { TaskOutcome } from '../../common/task-outcome.js';
import type { AgentRunInput, AgentRunResult } from '../../common/run.js';
import {
  BATCH_MEMO_KEY,
  progressQuery,
  reportBySignalSignal,
  resultsQuery,
  taskFinishedSignal,
  type AgentBatchInput,
  type AgentBatchResult,
  type BatchMembership,
  type BatchProgress,
  type BatchTaskReport,
} from './definitions.js';
import { BatchBudget, type BatchBudgetCarried } from './budget.js';
import type { BatchCarried } from './drain.js';
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
import {
  MAX_ERROR_TEXTS,
  packErrors,
  packOutcomes,
  unpackErrors,
  unpackOutcomes,
  type PackedErrors,
  type PackedOutcome,
} from './outcomes.js';
import { BatchTasks } from './tasks.js';
import { runSummary } from '../../common/run-summary.js';
import { childRunOutcome } from '../failure-outcomes.js';
import { batchActivities } from '../activities.js';

/** Seconds without a report after which the batch reconciles its window (input `reconcileAfterSeconds`). */
const DEFAULT_RECONCILE_AFTER_SECONDS = 300;

/** What a sliding-window batch carries across continue-as-new (its JSON size is bounded: see the module doc). */
export interface WindowCarried extends Omit<AgentBatchResult, 'total'>, BatchBudgetCarried {
  /** The first task index not started yet. */
  next: number;
  /** Started and not yet reported: their children keep running and report to the next run. */
  running: number[];
  /** Every finished task's outcome, packed (workflows/batch/outcomes.ts). */
  packed: string;
  /** The error texts of finished tasks, packed (bounded: workflows/batch/outcomes.ts). */
  errors: PackedErrors;
}

/** The state this run starts from: the previous run's (converted when a 0.3.0 run carried it), or a fresh one. */
export function windowState(carried: WindowCarried | BatchCarried | undefined): {
  st: WindowCarried;
  outcomes: (PackedOutcome | null)[];
  errors: Map<number, string>;
} {
  if (!carried)
    return {
      st: {
        next: 0,
        running: [],
        packed: '',
        errors: { texts: [], ranges: [] },
        done: 0,
        failed: 0,
        byStatus: {},
        tokens: 0,
        cost: 0,
        continuedAsNew: 0,
        failures: [],
      },
      outcomes: [],
      errors: new Map(),
    };
  if ('packed' in carried)
    return { st: carried, outcomes: unpackOutcomes(carried.packed), errors: unpackErrors(carried.errors) };
  // a 0.3.0 run drained before continuing-as-new: no task is running
  const { outcomes: legacy, ...rest } = carried;
  const outcomes = legacy.map((o) => (o ? ([o[0], o[1], o[2], o[3]] as PackedOutcome) : null));
  const errors = new Map<number, string>();
  legacy.forEach((o, i) => o?.[4] && errors.set(i, o[4]));
  return { st: { ...rest, running: [], packed: '', errors: { texts: [], ranges: [] } }, outcomes, errors };
}

/** The state to continue-as-new with. */
export function carriedState(
  st: WindowCarried,
  outcomes: (PackedOutcome | null)[],
  errors: ReadonlyMap<number, string>,
  total: number,
): WindowCarried {
  return { ...st, packed: packOutcomes(outcomes, total), errors: packErrors(errors) };
}

/** A report is recorded only when it is well-formed. */
function validReport(r: BatchTaskReport): boolean {
  const n = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  return (
    !!r &&
    Number.isInteger(r.index) &&
    STATUS_CODES.includes(r.status) &&
    n(r.turns) &&
    n(r.tokens) &&
    n(r.cost) &&
    (r.modelCalls === undefined || n(r.modelCalls))
  );
}

export async function runWindowBatch(
  input: AgentBatchInput,
  carried?: WindowCarried | BatchCarried,
): Promise<AgentBatchResult> {
  assertBatchInput(input);
  const batchId = workflowInfo().workflowId;
  const concurrency = input.concurrency ?? DEFAULT_CONCURRENCY;
  const { st, outcomes, errors } = windowState(carried);
  const errorTexts = new Set(errors.values());
  const tasks = new BatchTasks(input, batchId, concurrency, () => st.next);
  const total = tasks.total;
  const budget = new BatchBudget(input.budget, st);
  const running = new Set<number>(st.running);
  const childId = (i: number) => `${batchId}-${i}`;
  /** Starts issued and not yet resolved (the batch continues-as-new only once none is pending). */
  let starting = 0;
  let startedHere = 0;
  /** Bumped by every report and start resolution: what the main loop waits on. */
  let changes = 0;
  let cutting = false;
  const finished = () => st.done + st.failed >= total;

  const progress = (): BatchProgress =>
    batchProgress(st, {
      total,
      running: running.size,
      concurrency,
      phase: finished() ? 'finished' : 'running',
      ...budget.progress(),
    });
  const publish = () => setCurrentDetails(batchDetails(progress(), batchId, budget.details()));

  /** Records task `i`'s outcome unless it is recorded already (or `i` was never started). */
  const record = (i: number, o: TaskOutcome) => {
    if (!Number.isInteger(i) || i < 0 || i >= st.next || outcomes[i]) return;
    const code = STATUS_CODES.indexOf(o.status);
    outcomes[i] = [code, o.turns, o.tokens, o.cost];
    // error texts for `results`: at most MAX_ERROR_TEXTS distinct ones (the child's result has every one)
    if (o.error && (errorTexts.has(o.error) || errorTexts.size < MAX_ERROR_TEXTS)) {
      errorTexts.add(o.error);
      errors.set(i, o.error);
    }
    countOutcome(st, i, childId(i), o);
    running.delete(i);
    changes += 1;
    budget.recorded(o.modelCalls ?? 0, [...running].map(childId)); // a hand-sent report may lack it
  };
  const recordResult = (i: number, result: AgentRunResult | undefined, err: unknown) =>
    record(i, childRunOutcome(result, err));

  setHandler(progressQuery, progress, {
    description: 'Batch progress: total, done, failed, running, queued, tokens, cost.',
  });
  setHandler(
    resultsQuery,
    (opts) =>
      resultsPage(opts, total, {
        workflowId: childId,
        outcome: (i) => outcomes[i],
        error: (i) => errors.get(i),
        running: (i) => running.has(i),
      }),
    {
      description:
        'Compact per-task outcomes { from = 0, limit = 1000 } → { results: [{ index, workflowId, status, turns, tokens, cost, error? }], total }; error texts of the first 100 distinct errors; full results are the children’s.',
    },
  );
  setHandler(taskFinishedSignal, (r) => void (validReport(r) && record(r.index, r)), {
    description: 'A child reports how it closed: { index, status, turns, tokens, cost, modelCalls, error? }.',
  });

  /** Children this run started: their completion events reach this run (the others were asked to report). */
  const startedByThisRun = new Set<number>();
  const launch = (i: number, task: AgentRunInput) => {
    running.add(i);
    startedByThisRun.add(i);
    starting += 1;
    const membership: BatchMembership = { workflowId: batchId, index: i };
    startChild<(input: AgentRunInput) => Promise<AgentRunResult>>('agentWorkflow', {
      workflowId: childId(i),
      args: [budget.taskInput(task)],
      ...(input.taskQueue ? { taskQueue: input.taskQueue } : {}),
      staticSummary: runSummary(task, `#${i}`),
      staticDetails: `batch ${batchId} · task ${i} of ${total} · model ${task.model}`,
      memo: { [BATCH_MEMO_KEY]: membership },
      parentClosePolicy: ParentClosePolicy.ABANDON,
      cancellationType: ChildWorkflowCancellationType.ABANDON,
    })
      .then(
        (child) =>
          // while this run lasts the child's completion records it; after, its report (handOver)
          void child.result().then(
            (r) => recordResult(i, r, undefined),
            (err) => recordResult(i, undefined, err),
          ),
        (err) => recordResult(i, undefined, err),
      )
      .finally(() => {
        starting -= 1;
        changes += 1;
      });
  };

  /**
   * Before continuing-as-new: asks each child this run started and still running to report by signal (its completion
   * event would reach a closed run). A child that cannot be asked has closed: its completion event is on its way to
   * this run, which waits for it (a minute at most: then the next run's reconciliation finds it).
   */
  const handOver = async () => {
    const closed: number[] = [];
    await Promise.all(
      [...running]
        .filter((i) => startedByThisRun.has(i))
        .map((i) =>
          getExternalWorkflowHandle(childId(i))
            .signal(reportBySignalSignal)
            .catch((err: unknown) => {
              if (isCancellation(err)) throw err;
              closed.push(i);
            }),
        ),
    );
    await condition(() => closed.every((i) => !running.has(i)), '1 minute');
  };

  // reconciliation: after a quiet spell, ask Temporal which children of the window are closed without a report
  const reconcileAfter = (input.reconcileAfterSeconds ?? DEFAULT_RECONCILE_AFTER_SECONDS) * 1000;
  let reconciling = false;
  const reconcile = async () => {
    for (;;) {
      const seen = changes;
      await sleep(reconcileAfter);
      if (changes !== seen || running.size === 0 || reconciling) continue;
      reconciling = true;
      try {
        const window = [...running];
        const closed = await batchActivities.closedBatchChildren.executeWithOptions(
          { summary: `reconcile ${window.length} running tasks` },
          [{ workflowIds: window.map(childId) }],
        );
        const byId = new Map(window.map((i) => [childId(i), i]));
        for (const c of closed) {
          const i = byId.get(c.workflowId);
          if (i !== undefined) record(i, c);
        }
      } finally {
        reconciling = false;
      }
    }
  };
  reconcile().catch(() => undefined); // ends with the run (continue-as-new, cancellation)

  try {
    publish();
    for (;;) {
      while (!cutting && running.size < concurrency && st.next < total) {
        const spent = budget.reached();
        if (spent) {
          // the pool is spent: the remaining tasks are not started
          const error = budget.text(spent);
          while (st.next < total) {
            const i = st.next++;
            recordResult(i, notStarted(error), undefined);
          }
          break;
        }
        const i = st.next;
        const task = await tasks.taskAt(i);
        st.next = i + 1;
        if (task === undefined) {
          recordResult(
            i,
            undefined,
            new Error(`task ${i} could not be read from its page holder ${tasks.holderOf(i)}`),
          );
          continue;
        }
        launch(i, task);
        startedHere += 1;
        if (historyFull(input, startedHere)) cutting = true;
      }
      publish();
      if (finished()) break;
      if (cutting && starting === 0) {
        // the running children carry on and report to the next run
        await handOver();
        st.continuedAsNew += 1;
        st.running = [...running];
        return await continueAsNew<typeof runWindowBatch>(input, carriedState(st, outcomes, errors, total));
      }
      const seen = changes;
      await condition(() => changes !== seen);
      if (!cutting && historyFull(input, startedHere)) cutting = true;
    }
  } finally {
    const cancelled = CancellationScope.current().consideredCancelled;
    if (finished() || cancelled) {
      await CancellationScope.nonCancellable(async () => {
        // ABANDON children outlive the batch unless told
        if (cancelled)
          await Promise.all(
            [...running].map((i) =>
              getExternalWorkflowHandle(childId(i))
                .cancel()
                .catch(() => undefined),
            ),
          );
        await tasks.release();
      });
    }
  }
  publish();
  return batchResult(total, st);
}
