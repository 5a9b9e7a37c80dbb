/**
 * The graded side of a counterfactual replay's report (docs/runs.md#counterfactual-replay). Old: a batch's own summary
 * when its tasks are replayed with their own graders; with `grade` (single runs, or a batch graded anew) each original
 * is graded here with that grader — a built-in, or one of `ReplayOptions.graders`. New: the replay batch's summary; for
 * a batch with variants or repeats, the replays' verdicts summed in the original's shape (replay `i` is the original's
 * slot `i`), so pass@k old and new count the same (task, variant) groups. Both sums are the batch's own
 * (common/grading-summary.ts).
 */
import { BUILTIN_GRADER_DEFINITIONS, judge, type GraderDefinition } from '../../node-common/graders.js';
import type { AgentBatchResult, BatchTaskResult } from '../../common/batch-definitions.js';
import {
  gradable,
  graderOf,
  slotGrade,
  slotOf,
  type BatchShape,
  type BatchTask,
  type GradingSummary,
  type SlotGrade,
  type VariantSummary,
} from '../../common/grading.js';
import { batchSummary, type BatchSummary } from '../../common/grading-summary.js';
import { STATUS_CODES, type PackedOutcome } from '../../common/task-outcome.js';

import type { RecordedRun } from './recorded-run.js';

/** What the report's graded side needs besides the runs: the originals' shape and tasks, and how to grade old. */
export interface ReplayGradingPlan {
  /** The original batch's variants and repeats (a plain shape for single runs). */
  shape: BatchShape;
  /** The replay tasks (their `expected` / `grader`), replay `i` of original `i`. */
  tasks: BatchTask[];
  /** The original batch's own summary: the old side unless `regrade`. */
  old?: { grading?: GradingSummary; variants?: VariantSummary[] };
  /** Grade the originals here with the tasks' grader (the replay was given `grade`). */
  regrade: boolean;
  /** Graders besides the built-ins that can grade an original here (`ReplayOptions.graders`). */
  graders?: GraderDefinition[];
}

/** The graded summaries, old and new, and with variants their lines old and new. */
export interface ReplayGrading {
  grading?: { old?: GradingSummary; new?: GradingSummary };
  variants?: { old?: VariantSummary[]; new?: VariantSummary[] };
  /** Why the old side has no summary though the replay is graded (e.g. a worker's grader). */
  oldNotGraded?: string;
}

/** Whether a batch has variants or repeats (its slots are not its tasks). */
export const shaped = (shape: BatchShape): boolean => (shape.variants?.length ?? 0) > 0 || (shape.repeat ?? 1) > 1;

/** The graded side of the report: `originals[i]` read by the report, `replays` the replay batch's results and result. */
export async function replayGrading(
  plan: ReplayGradingPlan,
  originals: RecordedRun[],
  replays: BatchTaskResult[],
  result: AgentBatchResult,
): Promise<ReplayGrading> {
  const old = plan.regrade ? await gradeOriginals(plan, originals) : { summary: plan.old ?? {} };
  const fresh: BatchSummary = shaped(plan.shape) ? newInShape(plan.shape, replays, result) : result;
  const out: ReplayGrading = {};
  if (old.summary.grading || fresh.grading) out.grading = strip(old.summary.grading, fresh.grading);
  if (old.summary.variants || (shaped(plan.shape) && fresh.variants))
    out.variants = strip(old.summary.variants, fresh.variants);
  if ('notGraded' in old && old.notGraded) out.oldNotGraded = old.notGraded;
  return out;
}

const strip = <T>(old: T | undefined, fresh: T | undefined) => ({
  ...(old ? { old } : {}),
  ...(fresh ? { new: fresh } : {}),
});

/** A run's outcome as a batch packs it (a status outside STATUS_CODES gets code 0). */
const packed = (status: string, turns: number, tokens: number, cost: number): PackedOutcome => [
  Math.max(0, STATUS_CODES.indexOf(status as never)),
  turns,
  tokens,
  cost,
];

/** The replay's verdicts summed as the original batch's slots. */
function newInShape(shape: BatchShape, replays: BatchTaskResult[], result: AgentBatchResult): BatchSummary {
  const grades = replays.map((r): SlotGrade | null => (r.grade ? slotGrade(r.grade) : null));
  const outcomes = replays.map((r) => packed(r.status, r.turns ?? 0, r.tokens ?? 0, r.cost ?? 0));
  const usage = {
    tokens: result.grading?.graderTokens ?? 0,
    cost: result.grading?.graderCost ?? 0,
    costBy: [],
    tokensBy: [],
  };
  return batchSummary(shape, { grades, usage, anyGraded: grades.some(Boolean) }, outcomes, replays.length);
}

/** Grades each original with its task's grader, here; a grader this process does not have leaves old ungraded. */
async function gradeOriginals(
  plan: ReplayGradingPlan,
  originals: RecordedRun[],
): Promise<{ summary: BatchSummary; notGraded?: string }> {
  const graders = new Map((plan.graders ?? []).map((g) => [g.name, g.grade]));
  const grades: (SlotGrade | null)[] = [];
  for (const [i, run] of originals.entries()) {
    const task = plan.tasks[i];
    const name = graderOf(task);
    if (name === undefined) {
      grades.push(null);
      continue;
    }
    const grade = graders.get(name) ?? BUILTIN_GRADER_DEFINITIONS[name];
    if (!grade)
      return {
        summary: {},
        notGraded: `grader ${name} is not a built-in: pass it in replay's graders option to grade the originals`,
      };
    grades.push(await gradeOne(name, grade, task, run, i, plan.shape));
  }
  const outcomes = originals.map((r) => packed(r.status, r.turns, r.usage.totalTokens, r.usage.cost.total));
  const usage = { tokens: 0, cost: 0, costBy: [], tokensBy: [] };
  return {
    summary: batchSummary(plan.shape, { grades, usage, anyGraded: grades.some(Boolean) }, outcomes, originals.length),
  };
}

/** One original's verdict, as the batch's grading gives it (a run that did not run fails its grade). */
async function gradeOne(
  name: string,
  grade: GraderDefinition['grade'],
  task: BatchTask,
  run: RecordedRun,
  slot: number,
  shape: BatchShape,
): Promise<SlotGrade> {
  if (!gradable(run)) return [2, 0];
  const s = slotOf(shape, slot);
  return slotGrade(
    await judge(name, grade, {
      task,
      result: {
        status: run.status as 'completed',
        finalText: run.finalText,
        newMessages: run.messages,
        turns: run.turns,
        usage: run.usage,
        ...(run.output !== undefined ? { output: run.output } : {}),
      },
      transcript: run.messages,
      workflowId: run.workflowId,
      ...(s.variant !== undefined ? { variant: shape.variants![s.variant].name } : {}),
      repeat: s.repeat,
    }),
  );
}
