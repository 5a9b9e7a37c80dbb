/**
 * A graded batch's verdicts (from 0.5.0, `since(PATCH.batchGrading)`, README "Graded batches"): each finished slot
 * of a task that carries a grader is judged by the `gradeBatchTask` activity (a completed run, or a stopped one that
 * ran), recorded once per slot — the activity may run again after a worker is lost, the workflow records its one
 * completion — and summed into pass rate, pass@k, mean score and cost per pass, overall and per variant. A run that
 * failed, was cancelled or never started is recorded as failing its grade without calling the grader; a grader that
 * throws is a grading error, not a task failure. What a grader spent calling a model is added to the batch's usage
 * (and so to its budget).
 *
 * Carried across continue-as-new: the verdicts packed three characters a slot, up to MAX_REASONS reasons, the grader
 * usage, and the graded tasks of the running slots (at most `concurrency`). The batch continues-as-new only once no
 * grading is pending.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { KeelActivities } from '../../activities/index.js';
import {
  gradable,
  graderOf,
  slotGrade,
  slotOf,
  type BatchShape,
  type BatchTask,
  type GradeOutcome,
  type GradingSummary,
  type SlotGrade,
  type VariantSummary,
} from '../../common/grading.js';
import type { RunStatus } from '../../common/run.js';
import type { PackedOutcome } from './outcomes.js';
import { batchSummary, type BatchSummary } from '../../common/grading-summary.js';
import { since } from '../since.js';

/** Reasons (each at most 200 characters) a batch keeps for its `results` query, across continue-as-new. */
export const MAX_REASONS = 1000;

export type { SlotGrade };

/** What a graded batch carries across continue-as-new. */
export interface GradingCarried {
  grades: string;
  reasons: [slot: number, text: string][];
  graderTokens: number;
  graderCost: number;
  /** Grader cost and tokens by variant index (0 without variants). */
  graderCostBy: number[];
  graderTokensBy: number[];
  /** The graded tasks of running slots. */
  specs: [slot: number, task: BatchTask][];
}

const CODES = '.pfe';

/** Packs verdicts: per slot one code character and the score in thousandths, two base-36 digits. */
export function packGrades(grades: readonly (SlotGrade | null | undefined)[]): string {
  let end = grades.length;
  while (end > 0 && !grades[end - 1]) end--;
  let s = '';
  for (let i = 0; i < end; i++) {
    const g = grades[i];
    s += g
      ? CODES[g[0]] +
        Math.round(g[1] * 1000)
          .toString(36)
          .padStart(2, '0')
      : '...';
  }
  return s;
}

export function unpackGrades(packed: string): (SlotGrade | null)[] {
  const out: (SlotGrade | null)[] = [];
  for (let i = 0; i + 3 <= packed.length; i += 3) {
    const code = CODES.indexOf(packed[i]);
    out.push(code > 0 ? [code as 1 | 2 | 3, parseInt(packed.slice(i + 1, i + 3), 36) / 1000] : null);
  }
  return out;
}

const clip = (text: string) => (text.length > 200 ? `${text.slice(0, 199)}…` : text);

/** The verdicts of one batch run and the grading it has pending. */
export class BatchGrading {
  readonly grades: (SlotGrade | null)[];
  readonly reasons: Map<number, string>;
  private readonly specs: Map<number, BatchTask>;
  private usage: { tokens: number; cost: number; costBy: number[]; tokensBy: number[] };
  /** Slots whose grading activity started and has not finished. */
  private readonly pendingSlots = new Set<number>();
  private readonly activities: ReturnType<typeof proxyActivities<KeelActivities>>;

  constructor(
    private readonly shape: BatchShape,
    carried: GradingCarried | undefined,
    heartbeatSeconds: number,
  ) {
    this.grades = carried ? unpackGrades(carried.grades) : [];
    this.reasons = new Map(carried?.reasons ?? []);
    this.specs = new Map(carried?.specs ?? []);
    this.usage = {
      tokens: carried?.graderTokens ?? 0,
      cost: carried?.graderCost ?? 0,
      costBy: carried?.graderCostBy ?? [],
      tokensBy: carried?.graderTokensBy ?? [],
    };
    this.activities = proxyActivities<KeelActivities>({
      startToCloseTimeout: '10m',
      heartbeatTimeout: `${heartbeatSeconds}s`,
      retry: { maximumAttempts: 5 },
    });
  }

  /** Slot `s` of `task` started: keeps the task if it is graded. */
  started(s: number, task: BatchTask): void {
    if (graderOf(task) !== undefined) this.specs.set(s, task);
  }

  /** Grading activities started and not finished. */
  get pending(): number {
    return this.pendingSlots.size;
  }

  /** Whether slot `s` finished and its verdict is not recorded yet. */
  isPending(s: number): boolean {
    return this.pendingSlots.has(s);
  }

  private set(s: number, g: SlotGrade, reason: string | undefined): void {
    this.grades[s] = g;
    if (reason && this.reasons.size < MAX_REASONS) this.reasons.set(s, clip(reason));
  }

  /**
   * Slot `s` finished with `o` (its child `workflowId`): grades it when its task is graded. `spent` adds a grader's
   * usage to the batch's; `done` is called once the verdict is recorded.
   */
  finished(
    s: number,
    workflowId: string,
    o: { status: RunStatus; turns: number },
    spent: (u: { tokens: number; cost: number; modelCalls: number }) => void,
    done: () => void,
  ): void {
    const task = this.specs.get(s);
    if (!task) return;
    this.specs.delete(s);
    if (!gradable(o)) {
      this.set(s, [2, 0], `not graded: the run ${o.status === 'stopped' ? 'never started' : o.status}`);
      done();
      return;
    }
    const slot = slotOf(this.shape, s);
    this.pendingSlots.add(s);
    void this.activities.gradeBatchTask
      .executeWithOptions({ summary: `grade ${workflowId} (${graderOf(task)})` }, [
        {
          workflowId,
          task,
          ...(slot.variant !== undefined ? { variant: this.shape.variants![slot.variant].name } : {}),
          repeat: slot.repeat,
        },
      ])
      .then(
        (g: GradeOutcome) => this.record(s, slot.variant ?? 0, g, spent),
        (err: unknown) =>
          this.record(
            s,
            slot.variant ?? 0,
            { error: `grading failed: ${(err as Error)?.message ?? String(err)}` },
            spent,
          ),
      )
      .finally(() => {
        this.pendingSlots.delete(s);
        done();
      });
  }

  private record(
    s: number,
    variant: number,
    g: GradeOutcome,
    spent: (u: { tokens: number; cost: number; modelCalls: number }) => void,
  ): void {
    if (this.grades[s]) return;
    this.set(s, slotGrade(g), 'error' in g ? g.error : g.reason);
    const u = { tokens: g.usage?.tokens ?? 0, cost: g.usage?.cost ?? 0, modelCalls: g.usage?.modelCalls ?? 0 };
    if (u.tokens || u.cost || u.modelCalls) {
      this.usage.tokens += u.tokens;
      this.usage.cost += u.cost;
      this.usage.costBy[variant] = (this.usage.costBy[variant] ?? 0) + u.cost;
      this.usage.tokensBy[variant] = (this.usage.tokensBy[variant] ?? 0) + u.tokens;
      spent(u);
    }
  }

  /** Slot `s`'s grade for the `results` query. */
  gradeOf(s: number): { pass: boolean; score: number; reason?: string; error?: string } | undefined {
    const g = this.grades[s];
    if (!g) return undefined;
    const reason = this.reasons.get(s);
    if (g[0] === 3) return { pass: false, score: 0, error: reason ?? 'grading error' };
    return { pass: g[0] === 1, score: g[1], ...(reason ? { reason } : {}) };
  }

  carried(running: Iterable<number>): GradingCarried {
    const keep = new Set(running);
    return {
      grades: packGrades(this.grades),
      reasons: [...this.reasons],
      graderTokens: this.usage.tokens,
      graderCost: this.usage.cost,
      graderCostBy: this.usage.costBy,
      graderTokensBy: this.usage.tokensBy,
      specs: [...this.specs].filter(([s]) => keep.has(s)),
    };
  }

  /**
   * The batch's summary over its slots (`outcomes` by slot): `grading` overall (when any slot is graded or pending),
   * one line per variant, and the tasks whose variants disagree (pass, or else status; first 100).
   */
  summary(outcomes: readonly (PackedOutcome | null)[], total: number): BatchSummary {
    const anyGraded = this.grades.some(Boolean) || this.specs.size > 0 || this.pendingSlots.size > 0;
    return batchSummary(this.shape, { grades: this.grades, usage: this.usage, anyGraded }, outcomes, total);
  }
}
