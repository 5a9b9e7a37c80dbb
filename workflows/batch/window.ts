/**
 * The sliding-window batch (from 0.4.0, `since(PATCH.slidingWindowBatch)`): at most `concurrency` child
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
  progressQuery,
  resultsQuery,
  type AgentBatchInput,
  type AgentBatchResult,
  type BatchProgress,
} from './definitions.js';
import {
  BATCH_MEMO_KEY,
  reportBySignalSignal,
  taskFinishedSignal,
  type BatchMembership,
  type BatchTaskReport,
} from '../batch-protocol.js';
import { BatchBudget, type BatchBudgetCarried } from './budget.js';
import { emptyLedger, TreeLedger } from '../../common/tree/budget.js';
import { registerTreeBudget } from '../tree/budget.js';

/** What a batch without a ledger answers its tasks' reservations with: granted, nothing recorded. */
const NO_LEDGER = new TreeLedger(
  undefined,
  emptyLedger(),
  () => ({ tokens: 0, costUsd: 0, modelCalls: 0 }),
  'batch budget',
);
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
import { refuseUnsealedStart } from './sealed-start.js';
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
import { BatchGrading, type GradingCarried } from './grading.js';
import {
  childTask,
  graderOf,
  slotChildId,
  slotOf,
  slotsPerTask,
  type BatchShape,
  type BatchTask,
} from '../../common/grading.js';
import { PATCH } from '../patches.js';
import { runSummary } from '../../common/run-summary.js';
import { childRunOutcome } from '../failure-outcomes.js';
import { batchActivities } from '../activities.js';
import { registerApprovalDesk, treePending } from '../tree/approvals.js';
import type { TreeApprovalsState } from '../../common/tree/approvals.js';
import { since } from '../since.js';

/** Seconds without a report after which the batch reconciles its window (input `reconcileAfterSeconds`). */
const DEFAULT_RECONCILE_AFTER_SECONDS = 300;

/** What a sliding-window batch carries across continue-as-new (its JSON size is bounded: see the module doc). */
export interface WindowCarried
  extends Omit<AgentBatchResult, 'total' | 'grading' | 'variants' | 'disagreements'>, BatchBudgetCarried {
  /** The first task index not started yet. */
  next: number;
  /** Started and not yet reported: their children keep running and report to the next run. */
  running: number[];
  /** Every finished task's outcome, packed (workflows/batch/outcomes.ts). */
  packed: string;
  /** The error texts of finished tasks, packed (bounded: workflows/batch/outcomes.ts). */
  errors: PackedErrors;
  /** A graded batch, or one with variants or repeats (from 0.5.0): its verdicts (workflows/batch/grading.ts). */
  verdicts?: GradingCarried;
  /** Its tasks' (and their sub-agents') calls awaiting approval (from 0.6.0, workflows/tree/approvals.ts). */
  treeApprovals?: TreeApprovalsState;
  /** The batch's worker caches no workflow (its start check, 0.12.0): tasks start not lean (no local activity). */
  noLocalActivities?: true;
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

/**
 * Starts a sliding-window batch's run (or goes on with the one it continues) and runs it to its end or its next
 * continue-as-new. The queries and the report signal are one line each: the state and what it does are
 * {@link WindowBatch}'s.
 */
export async function runWindowBatch(
  input: AgentBatchInput,
  carried?: WindowCarried | BatchCarried,
): Promise<AgentBatchResult> {
  assertBatchInput(input);
  const batch = new WindowBatch(input, carried);
  setHandler(progressQuery, () => withPendingApprovals(batch.progress(), batch.carried), {
    description: 'Batch progress: total, done, failed, running, queued, tokens, cost, pendingApprovals.',
  });
  // one approval desk: the tasks (and their sub-agents) tell the batch what waits for approval
  registerApprovalDesk(batch.carried, () => undefined, 'progress().pendingApprovals');
  setHandler(resultsQuery, (opts) => batch.results(opts), {
    description:
      'Compact per-task outcomes { from = 0, limit = 1000 } → { results: [{ index, workflowId, status, turns, tokens, cost, error?, task?, variant?, repeat?, grade? }], total }; error texts of the first 100 distinct errors; full results are the children’s.',
  });
  setHandler(taskFinishedSignal, (r) => batch.report(r), {
    description: 'A child reports how it closed: { index, status, turns, tokens, cost, modelCalls, error? }.',
  });
  registerTreeBudget(() => batch.ledger());
  // after the handlers and the constructor's patched() calls: an activity, so every later patch is asked in a later
  // workflow task (a local activity here broke the replay of a closed budgeted batch, the withdrawn 0.6.1)
  if (carried === undefined && (await refuseUnsealedStart())) batch.runNoLocalActivities();
  return batch.run();
}

/** `progress().pendingApprovals`: the calls the batch's tasks and their sub-agents wait for (absent when none). */
function withPendingApprovals(progress: BatchProgress, st: WindowCarried): BatchProgress {
  const pending = treePending(st);
  return pending.length > 0 ? { ...progress, pendingApprovals: pending } : progress;
}

/**
 * One run of a sliding-window batch: the window (tasks started and not yet reported), the outcomes recorded so far,
 * the budget, and how the run starts children, records their outcomes, reconciles, hands over and continues-as-new.
 */
class WindowBatch {
  private readonly batchId: string;
  private readonly concurrency: number;
  /** Counters, the next task index and the window as carried across continue-as-new. */
  private readonly st: WindowCarried;
  /** The state carried across continue-as-new (the approval desk keeps its tasks' pending calls there). */
  get carried(): WindowCarried {
    return this.st;
  }
  /** By task index: the packed outcome, or null while not finished. */
  private readonly outcomes: (PackedOutcome | null)[];
  /** By task index: the error text (at most MAX_ERROR_TEXTS distinct texts). */
  private readonly errors: Map<number, string>;
  private readonly errorTexts: Set<string>;
  private readonly tasks: BatchTasks;
  private readonly total: number;
  private readonly budget: BatchBudget;
  /** Started and not yet reported. */
  private readonly running: Set<number>;
  /** Children this run started: their completion events reach this run (the others were asked to report). */
  private readonly startedByThisRun = new Set<number>();
  /** Starts issued and not yet resolved (the batch continues-as-new only once none is pending). */
  private starting = 0;
  private startedHere = 0;
  /** Bumped by every report and start resolution: what the main loop waits on. */
  private changes = 0;
  private cutting = false;
  /**
   * From 0.8.0 (`keel-0.8-batch-full-window`): the first slot started after the cut. Those children are started asked
   * to report by signal (memo `keelBatch.reportBySignal`), so the window stays full while the run hands over the
   * children started before; undefined: not cut, or cut the 0.4.0 way (the window drains while handing over).
   */
  private cutAt: number | undefined;
  /** The full-window hand-over is done: no child starts any more, the run continues-as-new once its starts resolve. */
  private closing = false;
  /** Slots whose child's start has not resolved yet. */
  private readonly pendingStarts = new Set<number>();
  private reconciling = false;
  /** Variants and repeats (0.5.0): a task runs in `perTask` slots; without them one slot is one task. */
  private readonly shape: BatchShape;
  private readonly perTask: number;
  /** Grading, variants and repeats (`PATCH.batchGrading`), decided once per run when first needed. */
  private shaped: boolean | undefined;
  /** Tasks start lean (0.12.0; `leanTasks`), once asked. */
  private lean: boolean | undefined;
  private grading: BatchGrading | undefined;
  private readonly carriedGrading: GradingCarried | undefined;
  /** The last task read (a task runs in several slots). */
  private lastTask: { index: number; task: AgentRunInput | undefined } | undefined;

  constructor(
    private readonly input: AgentBatchInput,
    carried: WindowCarried | BatchCarried | undefined,
  ) {
    this.batchId = workflowInfo().workflowId;
    this.concurrency = input.concurrency ?? DEFAULT_CONCURRENCY;
    const { st, outcomes, errors } = windowState(carried);
    this.st = st;
    this.outcomes = outcomes;
    this.errors = errors;
    this.errorTexts = new Set(errors.values());
    this.carriedGrading = st.verdicts;
    // variants and repeats change the children's ids and count: behind the patch, checked at once when the input has them
    const wantsShape = (input.repeat ?? 1) > 1 || (input.variants?.length ?? 0) > 0;
    this.shape = wantsShape && this.gradingOn() ? { variants: input.variants, repeat: input.repeat } : {};
    this.perTask = slotsPerTask(this.shape);
    this.tasks = new BatchTasks(input, this.batchId, this.concurrency, () => Math.floor(this.st.next / this.perTask));
    this.total = this.tasks.total * this.perTask;
    this.budget = new BatchBudget(input.budget, st, carried === undefined);
    this.running = new Set<number>(st.running);
  }

  /**
   * Whether this run grades, and runs variants and repeats (`PATCH.batchGrading`, 0.5.0): asked once, the first time
   * the input or a task needs it, so a batch without them records no marker and replays as before.
   */
  private gradingOn(): boolean {
    if (this.shaped === undefined) {
      this.shaped = this.carriedGrading !== undefined || since(PATCH.batchGrading);
      if (this.shaped)
        this.grading = new BatchGrading(
          { variants: this.input.variants, repeat: this.input.repeat },
          this.carriedGrading,
          this.input.graderHeartbeatSeconds ?? 30,
        );
    }
    return this.shaped;
  }

  /**
   * Whether this run starts its tasks lean (`PATCH.leanBatchTasks`, 0.12.0: memo `leanStart`, the child's input check a
   * local activity, no visibility or sliding-window marker in the child): asked at the first task this run starts.
   */
  private leanTasks(): boolean {
    this.lean ??= since(PATCH.leanBatchTasks);
    return this.lean;
  }

  /** The batch's worker caches no workflow (its start check, first run only; carried on): no task starts lean. */
  runNoLocalActivities(): void {
    this.st.noLocalActivities = true;
  }

  /** Whether tasks run in variant or repeat slots: more than one per task, or one variant (whose fields still apply). */
  private slotted(): boolean {
    return this.perTask > 1 || this.shape.variants !== undefined;
  }

  private childId(i: number): string {
    return slotChildId(this.batchId, this.shape, i);
  }

  private finished(): boolean {
    return this.st.done + this.st.failed >= this.total && !this.grading?.pending;
  }

  /** The `progress` query (`summary`: with grading, variants and disagreements, computed over every slot). */
  progress(summary = true): BatchProgress {
    return {
      ...batchProgress(this.st, {
        total: this.total,
        running: this.running.size,
        concurrency: this.concurrency,
        phase: this.finished() ? 'finished' : 'running',
        ...this.budget.progress(),
      }),
      ...(summary && this.grading ? this.grading.summary(this.outcomes, this.total) : {}),
    };
  }

  /** The `results` query. */
  results(opts: Parameters<typeof resultsPage>[0]): ReturnType<typeof resultsPage> {
    const page = resultsPage(opts, this.total, {
      workflowId: (i) => this.childId(i),
      outcome: (i) => this.outcomes[i],
      error: (i) => this.errors.get(i),
      running: (i) => this.running.has(i),
    });
    if (!this.grading) return page;
    const shaped = this.slotted();
    for (const r of page.results) {
      const slot = slotOf(this.shape, r.index);
      const grade = this.grading.gradeOf(r.index);
      if (shaped) {
        r.task = slot.task;
        if (slot.variant !== undefined) r.variant = this.shape.variants![slot.variant].name;
        r.repeat = slot.repeat;
      }
      if (grade) r.grade = grade;
      else if (this.grading.isPending(r.index)) r.gradePending = true;
    }
    return page;
  }

  /**
   * The tree-budget ledger its tasks reserve from (a budget-less one, granting everything, when the batch has none).
   * Each reservation and settlement is an event of this run's history: the main loop wakes to check its size.
   */
  ledger(): TreeLedger {
    this.changes += 1;
    return this.budget.ledger ?? NO_LEDGER;
  }

  /** The `keelBatchTaskFinished` signal: a child reports how it closed (recorded when well-formed). */
  report(r: BatchTaskReport): void {
    if (validReport(r)) this.record(r.index, r);
  }

  private publish(): void {
    setCurrentDetails(batchDetails(this.progress(false), this.batchId, this.budget.details()));
  }

  /** Records task `i`'s outcome unless it is recorded already (or `i` was never started). */
  private record(i: number, o: TaskOutcome): void {
    if (!Number.isInteger(i) || i < 0 || i >= this.st.next || this.outcomes[i]) return;
    const code = STATUS_CODES.indexOf(o.status);
    this.outcomes[i] = [code, o.turns, o.tokens, o.cost];
    // error texts for `results`: at most MAX_ERROR_TEXTS distinct ones (the child's result has every one)
    if (o.error && (this.errorTexts.has(o.error) || this.errorTexts.size < MAX_ERROR_TEXTS)) {
      this.errorTexts.add(o.error);
      this.errors.set(i, o.error);
    }
    countOutcome(this.st, i, this.childId(i), o);
    this.running.delete(i);
    this.changes += 1;
    this.budget.recorded(
      o.modelCalls ?? 0,
      [...this.running].map((j) => this.childId(j)),
    ); // a hand-sent report may lack it
    this.grading?.finished(
      i,
      this.childId(i),
      o,
      (u) => {
        // a grader's model calls spend the batch's budget
        this.st.tokens += u.tokens;
        this.st.cost += u.cost;
        this.budget.graderSpent(u);
        this.budget.recorded(
          u.modelCalls,
          [...this.running].map((j) => this.childId(j)),
        );
      },
      () => (this.changes += 1),
    );
  }

  private recordResult(i: number, result: AgentRunResult | undefined, err: unknown): void {
    this.record(i, childRunOutcome(result, err));
  }

  /** Starts task `i`'s child; its completion (or failure to start) is recorded when it comes. */
  private launch(i: number, given: AgentRunInput): void {
    this.running.add(i);
    this.startedByThisRun.add(i);
    this.starting += 1;
    this.pendingStarts.add(i);
    const membership: BatchMembership = {
      workflowId: this.batchId,
      index: i,
      ...this.budget.membership(),
      ...(this.cutAt !== undefined ? { reportBySignal: true } : {}),
      ...(this.leanTasks() && !this.st.noLocalActivities ? { leanStart: true } : {}),
    };
    let task = given;
    // a graded task's expected and grader stay with the batch; a variant's fields replace the task's
    if (graderOf(given as BatchTask) !== undefined || this.slotted() ? this.gradingOn() : false) {
      const slot = slotOf(this.shape, i);
      task = childTask(given as BatchTask, slot.variant !== undefined ? this.shape.variants![slot.variant] : undefined);
      this.grading!.started(i, given as BatchTask);
    }
    startChild<(input: AgentRunInput) => Promise<AgentRunResult>>('agentWorkflow', {
      workflowId: this.childId(i),
      args: [this.budget.taskInput(task)],
      ...(this.input.taskQueue ? { taskQueue: this.input.taskQueue } : {}),
      staticSummary: runSummary(task, `#${i}`),
      staticDetails: `batch ${this.batchId} · task ${i} of ${this.total} · model ${task.model}`,
      memo: { [BATCH_MEMO_KEY]: membership },
      parentClosePolicy: ParentClosePolicy.ABANDON,
      cancellationType: ChildWorkflowCancellationType.ABANDON,
    })
      .then(
        (child) =>
          // while this run lasts the child's completion records it; after, its report (handOver)
          void child.result().then(
            (r) => this.recordResult(i, r, undefined),
            (err) => this.recordResult(i, undefined, err),
          ),
        (err) => this.recordResult(i, undefined, err),
      )
      .finally(() => {
        this.starting -= 1;
        this.pendingStarts.delete(i);
        this.changes += 1;
      });
  }

  /**
   * Before continuing-as-new: asks each child this run started and still running to report by signal (its completion
   * event would reach a closed run). A child that cannot be asked has closed: its completion event is on its way to
   * this run, which waits for it (a minute at most: then the next run's reconciliation finds it).
   */
  private async handOver(): Promise<void> {
    const cutAt = this.cutAt;
    // a full-window cut: the children started before it, once started (those after report by signal already)
    if (cutAt !== undefined) await condition(() => ![...this.pendingStarts].some((i) => i < cutAt));
    const closed: number[] = [];
    await Promise.all(
      [...this.running]
        .filter((i) => this.startedByThisRun.has(i) && (cutAt === undefined || i < cutAt))
        .map((i) =>
          getExternalWorkflowHandle(this.childId(i))
            .signal(reportBySignalSignal)
            .catch((err: unknown) => {
              if (isCancellation(err)) throw err;
              closed.push(i);
            }),
        ),
    );
    await condition(() => closed.every((i) => !this.running.has(i)), '1 minute');
  }

  /**
   * History is full: stop launching (0.4.0), or (0.8.0) hand over while the window keeps launching. A run that
   * reached its `continueAsNewAfterTasks` starts exactly that many, as before.
   */
  private cut(): void {
    this.cutting = true;
    const after = this.input.continueAsNewAfterTasks;
    if ((after !== undefined && this.startedHere >= after) || !since(PATCH.batchFullWindow)) return;
    this.cutAt = this.st.next;
    void this.handOver()
      .then(() => void (this.closing = true))
      .catch(() => undefined) // cancelled: the run's loop ends with its cancelled scope
      .finally(() => void (this.changes += 1));
  }

  /** Whether the run may start another child: until the cut (0.4.0), or until the hand-over is done (0.8.0). */
  private launching(): boolean {
    return this.cutAt === undefined ? !this.cutting : !this.closing;
  }

  /** Whether the run may continue-as-new now: cut, no start pending, and a full-window hand-over done. */
  private mayContinue(): boolean {
    return this.cutting && this.starting === 0 && (this.cutAt === undefined || this.closing);
  }

  /** Reconciliation: after a quiet spell, asks Temporal which children of the window are closed without a report. */
  private async reconcile(): Promise<void> {
    const reconcileAfter = (this.input.reconcileAfterSeconds ?? DEFAULT_RECONCILE_AFTER_SECONDS) * 1000;
    for (;;) {
      const seen = this.changes;
      await sleep(reconcileAfter);
      if (this.changes !== seen || this.running.size === 0 || this.reconciling) continue;
      this.reconciling = true;
      try {
        const window = [...this.running];
        const closed = await batchActivities.closedBatchChildren.executeWithOptions(
          { summary: `reconcile ${window.length} running tasks` },
          [{ workflowIds: window.map((i) => this.childId(i)) }],
        );
        const byId = new Map(window.map((i) => [this.childId(i), i]));
        for (const c of closed) {
          const i = byId.get(c.workflowId);
          if (i !== undefined) this.record(i, c);
        }
      } finally {
        this.reconciling = false;
      }
    }
  }

  /**
   * The run: keeps up to `concurrency` children running until every task is recorded (then returns the result), or
   * until its history is full (then hands over and continues-as-new). Cancelled, it cancels its running children.
   */
  async run(): Promise<AgentBatchResult> {
    const { input, st, running, tasks, budget, total } = this;
    this.reconcile().catch(() => undefined); // ends with the run (continue-as-new, cancellation)
    try {
      this.publish();
      for (;;) {
        while (this.launching() && running.size < this.concurrency && st.next < total) {
          const spent = budget.reached();
          if (spent) {
            // the pool is spent: the remaining tasks are not started
            const error = budget.text(spent);
            while (st.next < total) {
              const i = st.next++;
              this.recordResult(i, notStarted(error), undefined);
            }
            break;
          }
          const i = st.next;
          const t = Math.floor(i / this.perTask);
          if (this.lastTask?.index !== t) this.lastTask = { index: t, task: await tasks.taskAt(t) };
          const task = this.lastTask.task;
          st.next = i + 1;
          if (task === undefined) {
            this.recordResult(
              i,
              undefined,
              new Error(`task ${t} could not be read from its page holder ${tasks.holderOf(t)}`),
            );
            continue;
          }
          this.launch(i, task);
          this.startedHere += 1;
          if (!this.cutting && historyFull(input, this.startedHere)) this.cut();
        }
        this.publish();
        if (this.finished()) break;
        if (this.mayContinue()) {
          // the running children carry on and report to the next run
          if (this.cutAt === undefined) await this.handOver();
          // verdicts are recorded by this run: none may be pending when it hands over
          if (this.grading) await condition(() => this.grading!.pending === 0);
          st.continuedAsNew += 1;
          st.running = [...running];
          if (this.grading) st.verdicts = this.grading.carried(running);
          return await continueAsNew<typeof runWindowBatch>(input, carriedState(st, this.outcomes, this.errors, total));
        }
        const seen = this.changes;
        await condition(() => this.changes !== seen);
        if (!this.cutting && historyFull(input, this.startedHere)) this.cut();
      }
    } finally {
      const cancelled = CancellationScope.current().consideredCancelled;
      if (this.finished() || cancelled) {
        await CancellationScope.nonCancellable(async () => {
          // ABANDON children outlive the batch unless told
          if (cancelled)
            await Promise.all(
              [...running].map((i) =>
                getExternalWorkflowHandle(this.childId(i))
                  .cancel()
                  .catch(() => undefined),
              ),
            );
          await tasks.release();
        });
      }
    }
    this.publish();
    const { grading, variants, disagreements } = this.grading?.summary(this.outcomes, total) ?? {};
    return {
      ...batchResult(total, st),
      ...(grading ? { grading } : {}),
      ...(variants ? { variants, disagreements } : {}),
    };
  }
}
