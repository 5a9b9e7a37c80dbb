/**
 * Graded batches and variants (README "Graded batches"): what a batch task may carry to be judged (`expected`,
 * `grader`), the variants a batch runs each task under, how a batch's slots map to tasks, variants and repeats, and
 * the summaries a batch reports. Sandbox-safe (types and pure functions): the batch workflow, the grading activity
 * and the client share it.
 */
import type { AgentRunInput } from './run.js';

/** The graders every worker has: on the final text (`exact`, `includes`, `regex`, `json-schema`) or the transcript. */
export const BUILTIN_GRADERS = ['exact', 'includes', 'regex', 'json-schema', 'tool-called'] as const;

/** What a batch task may carry besides its AgentRunInput fields (stripped before its child run starts). */
export interface GradedTaskFields {
  /** What the grader compares with (a text, texts, a pattern, a JSON Schema, a tool name: see the grader). */
  expected?: unknown;
  /** A built-in grader's name or one registered on the worker with `defineGrader`. Default `exact` when `expected` is set. */
  grader?: string;
}

/** A batch task: an AgentRunInput, optionally with {@link GradedTaskFields}. */
export type BatchTask = AgentRunInput & GradedTaskFields;

/** A grader's verdict on one task attempt. */
export interface Grade {
  /** 0..1 (built-ins: 1 or 0). */
  score: number;
  pass: boolean;
  reason?: string;
}

/** A grader's usage when it called a model: counted against the batch budget. */
export interface GraderUsage {
  tokens?: number;
  cost?: number;
  modelCalls?: number;
}

/** What the grading activity returns: a verdict, or a grading error (the grader threw or is unknown). */
export type GradeOutcome = (Grade & { usage?: GraderUsage }) | { error: string; usage?: GraderUsage };

/** One variant of a batch: each task runs once per variant with these fields replacing its own. */
export interface BatchVariant {
  /** Letters, digits, `_` and `.`: children are `<batchId>-<name>-<index>`. */
  name: string;
  model?: string;
  /** The variant's fallback models, replacing the task's (docs/models.md#fallback-models). */
  fallbackModels?: string[];
  systemPrompt?: string;
  maxTurns?: number;
}

export const VARIANT_NAME = /^[A-Za-z0-9_.]{1,40}$/;

/** The shape of a batch: how many variants and repeats each task runs under. */
export interface BatchShape {
  variants?: BatchVariant[];
  /** Runs of each task (per variant), for pass@k. Default 1. */
  repeat?: number;
}

/** One slot of a batch: task `task` under variant `variant` (index into variants), attempt `repeat`. */
export interface Slot {
  task: number;
  variant?: number;
  repeat: number;
}

/** Slots per task: variants × repeats. */
export function slotsPerTask(shape: BatchShape): number {
  return Math.max(1, shape.variants?.length ?? 0) * Math.max(1, shape.repeat ?? 1);
}

/** Slot `s` (task-major: every variant and repeat of task 0, then task 1, …). */
export function slotOf(shape: BatchShape, s: number): Slot {
  const r = Math.max(1, shape.repeat ?? 1);
  const per = slotsPerTask(shape);
  const task = Math.floor(s / per);
  const rem = s % per;
  return { task, ...(shape.variants?.length ? { variant: Math.floor(rem / r) } : {}), repeat: rem % r };
}

/**
 * The child workflow id of slot `s`: `<batchId>-<index>` for a plain batch, `<batchId>-<variant>-<index>` with
 * variants, and `-r<j>` appended with `repeat` > 1.
 */
export function slotChildId(batchId: string, shape: BatchShape, s: number): string {
  if (!shape.variants?.length && (shape.repeat ?? 1) <= 1) return `${batchId}-${s}`;
  const slot = slotOf(shape, s);
  const v = slot.variant !== undefined ? `${shape.variants![slot.variant].name}-` : '';
  return `${batchId}-${v}${slot.task}${(shape.repeat ?? 1) > 1 ? `-r${slot.repeat}` : ''}`;
}

/**
 * The shape of a batch's child ids for its static details, as `slotChildId` makes them: `<batchId>-<index>`, with
 * variants `<batchId>-<variant>-<index>`, with repeat `…-r<j>`.
 */
export function childIdPattern(batchId: string, shape: BatchShape): string {
  const v = shape.variants?.length ? '<variant>-' : '';
  return `${batchId}-${v}<index>${(shape.repeat ?? 1) > 1 ? '-r<j>' : ''}`;
}

/** Task `task` as its child run gets it under `variant`: without `expected` / `grader`, the variant's fields applied. */
export function childTask(task: BatchTask, variant?: BatchVariant): AgentRunInput {
  const { expected: _e, grader: _g, ...run } = task;
  if (!variant) return run;
  const { name: _n, ...fields } = variant;
  return { ...run, ...fields };
}

/** The grader of a task: its own, else `exact` when it has `expected`; undefined when it is not graded. */
export function graderOf(task: GradedTaskFields): string | undefined {
  return task.grader ?? (task.expected !== undefined ? 'exact' : undefined);
}

/** Pass rate, pass@k, mean score and cost per passed attempt, of a whole batch or one variant. */
export interface GradingSummary {
  /** Attempts with a verdict. */
  graded: number;
  passed: number;
  /** Attempts whose grader threw (not counted in `graded`, not task failures). */
  errors: number;
  /** passed / graded (0 when none graded). */
  passRate: number;
  /** Mean score of the graded attempts. */
  meanScore: number;
  /** k = repeat: tasks with at least one passing attempt / tasks with at least one graded attempt. */
  passAtK: { k: number; tasks: number; passed: number; rate: number };
  /** (task cost + grading cost) / passed; null when nothing passed. */
  costPerPass: number | null;
  /** What graders spent calling models (counted against the batch budget). */
  graderTokens: number;
  graderCost: number;
}

/** One variant's line of a batch summary. */
export interface VariantSummary {
  name: string;
  /** Runs of this variant (tasks × repeat). */
  runs: number;
  done: number;
  failed: number;
  tokens: number;
  cost: number;
  turns: number;
  grading?: GradingSummary;
}

/** One slot's verdict: code 1 pass, 2 fail, 3 grading error; score 0..1. */
export type SlotGrade = [code: 1 | 2 | 3, score: number];

/** Whether a finished run is graded: it completed, or stopped after a turn; any other counts as a fail. */
export function gradable(o: { status: string; turns: number }): boolean {
  return o.status === 'completed' || (o.status === 'stopped' && o.turns > 0);
}

/** A verdict as a slot keeps it: an error is code 3, else pass 1 / fail 2 with the score clamped to 0..1. */
export function slotGrade(g: GradeOutcome | { pass: boolean; score: number; error?: string }): SlotGrade {
  if ('error' in g && g.error !== undefined) return [3, 0];
  const { pass, score } = g as Grade;
  return [pass ? 1 : 2, Math.min(1, Math.max(0, Number(score) || 0))];
}
