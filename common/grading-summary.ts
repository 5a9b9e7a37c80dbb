/**
 * A graded batch's summary over its slots (README "Graded batches"): pass rate, pass@k, mean score and cost per pass,
 * overall and per variant, and the tasks whose variants disagree. Pure and sandbox-safe (so in `common/`): the batch workflow sums its
 * own verdicts with it (workflows/batch/grading.ts), and a counterfactual replay of a batch with variants or repeats
 * sums the replay's verdicts in the original's shape (client/replay/replay-grading.ts), so pass@k old and new compare.
 */
import { slotOf, type BatchShape, type GradingSummary, type SlotGrade, type VariantSummary } from './grading.js';
import { STATUS_CODES, type PackedOutcome } from './task-outcome.js';

/** The verdicts a summary sums: by slot, the graders' usage (overall and by variant index), whether any is graded. */
export interface SlotVerdicts {
  grades: readonly (SlotGrade | null | undefined)[];
  usage: { tokens: number; cost: number; costBy: number[]; tokensBy: number[] };
  /** Any slot graded or pending: the summary then has `grading`. */
  anyGraded: boolean;
}

/** What `summary` reports: `grading` overall, one line per variant, the tasks whose variants disagree. */
export interface BatchSummary {
  grading?: GradingSummary;
  variants?: VariantSummary[];
  disagreements?: number[];
}

/** What a variant's (or the whole batch's) summary counts, over its slots. */
const TALLY_COUNTS = [
  'runs',
  'done',
  'failed',
  'tokens',
  'cost',
  'turns',
  'graded',
  'passed',
  'errors',
  'score',
] as const;

const zeroTally = () => ({
  ...(Object.fromEntries(TALLY_COUNTS.map((key) => [key, 0])) as Record<(typeof TALLY_COUNTS)[number], number>),
  /** Tasks graded at least once, and those that passed at least once (pass@k). */
  tasks: new Set<number>(),
  passedTasks: new Set<number>(),
});
type Tally = ReturnType<typeof zeroTally>;

const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** The summary of `total` slots in `shape` (`outcomes` by slot). */
export function batchSummary(
  shape: BatchShape,
  v: SlotVerdicts,
  outcomes: readonly (PackedOutcome | null | undefined)[],
  total: number,
): BatchSummary {
  const variants = shape.variants ?? [];
  const k = Math.max(1, shape.repeat ?? 1);
  const nv = Math.max(1, variants.length);
  const { acc, verdicts } = tallies(shape, v, outcomes, total);
  const all = zeroTally();
  for (const a of acc) for (const key of TALLY_COUNTS) all[key] += a[key];
  // pass@k overall counts (task, variant) pairs
  acc.forEach((a, i) => {
    for (const t of a.tasks) all.tasks.add(t * nv + i);
    for (const t of a.passedTasks) all.passedTasks.add(t * nv + i);
  });
  const out: BatchSummary = {};
  if (v.anyGraded) out.grading = gradingOf(all, k, v.usage.cost, v.usage.tokens);
  if (variants.length) {
    out.variants = variants.map((variant, i) => {
      const a = acc[i];
      return {
        name: variant.name,
        runs: a.runs,
        done: a.done,
        failed: a.failed,
        tokens: a.tokens,
        cost: round(a.cost),
        turns: a.turns,
        ...(v.anyGraded ? { grading: gradingOf(a, k, v.usage.costBy[i] ?? 0, v.usage.tokensBy[i] ?? 0) } : {}),
      };
    });
    const disagree: number[] = [];
    for (const [t, marks] of [...verdicts].sort((x, y) => x[0] - y[0])) {
      if (disagree.length >= 100) break;
      if (marks.length === variants.length && marks.every((m) => m !== undefined) && new Set(marks).size > 1)
        disagree.push(t);
    }
    out.disagreements = disagree;
  }
  return out;
}

/** Per variant a tally of its slots; per task, per variant a verdict (pass / fail) or status, for disagreements. */
function tallies(
  shape: BatchShape,
  v: SlotVerdicts,
  outcomes: readonly (PackedOutcome | null | undefined)[],
  total: number,
): { acc: Tally[]; verdicts: Map<number, (string | undefined)[]> } {
  const variants = shape.variants ?? [];
  const acc = Array.from({ length: Math.max(1, variants.length) }, zeroTally);
  const verdicts = new Map<number, (string | undefined)[]>();
  for (let s = 0; s < total; s++) {
    const slot = slotOf(shape, s);
    const a = acc[slot.variant ?? 0];
    a.runs += 1;
    const o = outcomes[s];
    if (o) {
      const status = STATUS_CODES[o[0]];
      if (status === 'completed' || status === 'stopped') a.done += 1;
      else a.failed += 1;
      a.turns += o[1];
      a.tokens += o[2];
      a.cost += o[3];
    }
    const g = v.grades[s];
    if (g?.[0] === 3) a.errors += 1;
    else if (g) {
      a.graded += 1;
      a.score += g[1];
      a.tasks.add(slot.task);
      if (g[0] === 1) {
        a.passed += 1;
        a.passedTasks.add(slot.task);
      }
    }
    if (variants.length > 1 && (o || g)) {
      const marks = verdicts.get(slot.task) ?? [];
      // a task passes under a variant when any attempt passes (pass@k); ungraded: its status
      const mark = g && g[0] !== 3 ? (g[0] === 1 ? 'pass' : 'fail') : o ? STATUS_CODES[o[0]] : undefined;
      if (marks[slot.variant!] !== 'pass') marks[slot.variant!] = mark;
      verdicts.set(slot.task, marks);
    }
  }
  return { acc, verdicts };
}

function gradingOf(a: Tally, k: number, graderCost: number, graderTokens: number): GradingSummary {
  return {
    graded: a.graded,
    passed: a.passed,
    errors: a.errors,
    passRate: a.graded ? round(a.passed / a.graded) : 0,
    meanScore: a.graded ? round(a.score / a.graded) : 0,
    passAtK: {
      k,
      tasks: a.tasks.size,
      passed: a.passedTasks.size,
      rate: a.tasks.size ? round(a.passedTasks.size / a.tasks.size) : 0,
    },
    costPerPass: a.passed ? round((a.cost + graderCost) / a.passed) : null,
    graderTokens,
    graderCost: round(graderCost),
  };
}
