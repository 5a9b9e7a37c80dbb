/**
 * What both batch code paths (workflows/batch/drain.ts, workflows/batch/window.ts) share about a batch's input and its tasks: the input
 * check (the batch has no validation activity), a child's summary line, the outcome of a task the budget did not
 * start, the status codes of the compact outcomes, the counters an outcome adds to, the current details and the
 * batch's result. Pure functions, no commands.
 */
import { ApplicationFailure, workflowInfo } from '@temporalio/workflow';
import { emptyUsage } from '../../common/messages.js';
import type { AgentRunInput, AgentRunResult, RunStatus } from '../../common/run.js';
import type { TaskOutcome } from '../../common/task-outcome.js';
import type { AgentBatchInput, AgentBatchResult, BatchPageRef, BatchProgress, BatchTaskResult } from './definitions.js';
import { ErrorType } from '../../common/errors.js';
import { VARIANT_NAME } from '../../common/grading.js';

export const DEFAULT_CONCURRENCY = 8;
export const DEFAULT_AFTER_EVENTS = 10_000;
export const DEFAULT_AFTER_BYTES = 8 * 1024 * 1024;
/** Failures the batch result lists (with their error texts, clipped to 300 characters). */
export const MAX_FAILURES_KEPT = 100;

/** A compact outcome's status code is its index here. */
import { STATUS_CODES } from '../../common/task-outcome.js';
export { STATUS_CODES };

/** Throws `InvalidAgentBatchInput` (non-retryable) naming every bad field; returns when the input is well-formed. */
export function assertBatchInput(input: AgentBatchInput): void {
  const errors = checkInput(input);
  if (errors.length === 0) return;
  throw ApplicationFailure.create({
    type: ErrorType.InvalidAgentBatchInput,
    message: `Invalid AgentBatchInput: ${errors.join('; ')}`,
    nonRetryable: true,
    details: [errors],
  });
}

function checkInput(input: AgentBatchInput): string[] {
  const errors: string[] = [];
  if (!input || typeof input !== 'object') return ['input: must be an object { tasks, concurrency?, taskQueue? }'];
  const t = input.tasks as unknown;
  if (!Array.isArray(t)) {
    const pages = (t as BatchPageRef | undefined)?.pages;
    if (
      !Array.isArray(pages) ||
      pages.some((p) => !p || typeof p.workflowId !== 'string' || !Number.isInteger(p.count) || p.count < 0)
    ) {
      errors.push('tasks: must be an array of AgentRunInput, or { pages: [{ workflowId, count }] }');
    }
  } else if (t.some((x) => !x || typeof x !== 'object' || Array.isArray(x))) {
    errors.push('tasks: every task must be an AgentRunInput object');
  }
  if (input.concurrency !== undefined && (!Number.isInteger(input.concurrency) || input.concurrency < 1))
    errors.push('concurrency: must be an integer >= 1');
  if (input.taskQueue !== undefined && (typeof input.taskQueue !== 'string' || !input.taskQueue))
    errors.push('taskQueue: must be a non-empty string');
  if (input.repeat !== undefined && (!Number.isInteger(input.repeat) || input.repeat < 1 || input.repeat > 100))
    errors.push('repeat: must be an integer from 1 to 100');
  if (input.variants !== undefined) {
    const v = input.variants as unknown;
    if (!Array.isArray(v) || v.length < 1 || v.length > 10)
      errors.push('variants: must be an array of 1 to 10 variants');
    else {
      const names = new Set<string>();
      v.forEach((x: Record<string, unknown>, i) => {
        if (!x || typeof x !== 'object' || typeof x.name !== 'string' || !VARIANT_NAME.test(x.name))
          errors.push(`variants[${i}].name: must be 1 to 40 letters, digits, _ or .`);
        else if (names.has(x.name)) errors.push(`variants[${i}].name: ${x.name} is given twice`);
        else names.add(x.name);
        for (const key of Object.keys(x ?? {}))
          if (!['name', 'model', 'fallbackModels', 'systemPrompt', 'maxTurns'].includes(key))
            errors.push(
              `variants[${i}].${key}: unknown field (a variant sets model, fallbackModels, systemPrompt, maxTurns)`,
            );
      });
    }
  }
  const budgetErrors = budgetFieldErrors(input.budget);
  errors.push(...budgetErrors);
  for (const k of [
    'continueAsNewAfterEvents',
    'continueAsNewAfterBytes',
    'continueAsNewAfterTasks',
    'reconcileAfterSeconds',
    'graderHeartbeatSeconds',
  ] as const) {
    const v = input[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) errors.push(`${k}: must be an integer >= 1`);
  }
  return errors;
}

/** `budget.maxTokens: must be an integer >= 1`, … (the batch checks its own input: it has no validation activity). */
function budgetFieldErrors(budget: unknown): string[] {
  if (budget === undefined) return [];
  if (!budget || typeof budget !== 'object' || Array.isArray(budget))
    return ['budget: must be an object { maxTokens?, maxCostUsd?, maxModelCalls? }'];
  const errors: string[] = [];
  const b = budget as Record<string, unknown>;
  for (const key of Object.keys(b))
    if (!['maxTokens', 'maxCostUsd', 'maxModelCalls'].includes(key)) errors.push(`budget.${key}: unknown field`);
  for (const k of ['maxTokens', 'maxModelCalls'])
    if (b[k] !== undefined && (!Number.isInteger(b[k]) || (b[k] as number) < 1))
      errors.push(`budget.${k}: must be an integer >= 1`);
  if (b.maxCostUsd !== undefined && (typeof b.maxCostUsd !== 'number' || !(b.maxCostUsd > 0)))
    errors.push('budget.maxCostUsd: must be a number > 0');
  return errors;
}

/** The outcome recorded for a task the spent batch budget did not start. */
export function notStarted(error: string): AgentRunResult {
  return { status: 'stopped', finalText: '', newMessages: [], usage: emptyUsage(), turns: 0, error };
}

/** Whether the batch's history asks for a continue-as-new (Temporal's suggestion, or the input's limits). */
export function historyFull(input: AgentBatchInput, startedHere: number): boolean {
  const now = workflowInfo();
  return (
    now.continueAsNewSuggested ||
    now.historyLength >= (input.continueAsNewAfterEvents ?? DEFAULT_AFTER_EVENTS) ||
    now.historySize >= (input.continueAsNewAfterBytes ?? DEFAULT_AFTER_BYTES) ||
    (input.continueAsNewAfterTasks !== undefined && startedHere >= input.continueAsNewAfterTasks)
  );
}

/** The batch's result, from the counters it carries (cost rounded to micro-dollars). */
export function batchResult(total: number, st: Omit<AgentBatchResult, 'total'>): AgentBatchResult {
  return {
    total,
    done: st.done,
    failed: st.failed,
    byStatus: st.byStatus,
    tokens: st.tokens,
    cost: Math.round(st.cost * 1e6) / 1e6,
    ...(st.cacheRead ? { cacheRead: st.cacheRead } : {}),
    ...(st.cacheWrite ? { cacheWrite: st.cacheWrite } : {}),
    continuedAsNew: st.continuedAsNew,
    failures: st.failures,
  };
}

/** The progress query's answer, from the counters both batch paths keep (cost rounded to micro-dollars). */
export function batchProgress(
  st: Omit<AgentBatchResult, 'total'> & { next: number },
  at: Pick<BatchProgress, 'total' | 'running' | 'concurrency' | 'phase' | 'budget'>,
): BatchProgress {
  return {
    total: at.total,
    done: st.done,
    failed: st.failed,
    running: at.running,
    queued: at.total - st.next,
    tokens: st.tokens,
    cost: Math.round(st.cost * 1e6) / 1e6,
    continuedAsNew: st.continuedAsNew,
    concurrency: at.concurrency,
    phase: at.phase,
    ...(at.budget ? { budget: at.budget } : {}),
  };
}

/** A finished task's compact outcome: status code (index in STATUS_CODES), turns, tokens, cost. */
export type OutcomeCounts = { readonly 0: number; readonly 1: number; readonly 2: number; readonly 3: number };

/**
 * One page of the results query: tasks `[from, from + limit)` (limit 1000 by default), each from its compact outcome
 * (`outcome(i)`, with `error(i)`) or else running or queued.
 */
export function resultsPage(
  opts: { from?: number; limit?: number } | undefined,
  total: number,
  task: {
    workflowId(i: number): string;
    outcome(i: number): OutcomeCounts | null | undefined;
    error(i: number): string | undefined;
    running(i: number): boolean;
  },
): { results: BatchTaskResult[]; total: number } {
  const from = Math.max(0, opts?.from ?? 0);
  const end = Math.min(total, from + Math.max(1, opts?.limit ?? 1000));
  const results: BatchTaskResult[] = [];
  for (let i = from; i < end; i++) {
    const o = task.outcome(i);
    const workflowId = task.workflowId(i);
    if (o) {
      const error = task.error(i);
      results.push({
        index: i,
        workflowId,
        status: STATUS_CODES[o[0]],
        turns: o[1],
        tokens: o[2],
        cost: o[3],
        ...(error ? { error } : {}),
      });
    } else results.push({ index: i, workflowId, status: task.running(i) ? 'running' : 'queued' });
  }
  return { results, total };
}

/** The current details of a batch in the Temporal UI: phase, counts, usage, budget, the children's ids. */
export function batchDetails(p: BatchProgress, batchId: string, budgetLines: string[]): string {
  return [
    `**${p.phase}** · ${p.done + p.failed}/${p.total} finished`,
    `done ${p.done} · failed ${p.failed} · running ${p.running} · queued ${p.queued}`,
    `usage: ${p.tokens} tokens · $${p.cost.toFixed(4)} · concurrency ${p.concurrency}${p.continuedAsNew ? ` · continued-as-new ${p.continuedAsNew}×` : ''}`,
    ...budgetLines,
    `children: \`${batchId}-<index>\``,
  ].join('\n\n');
}

/** Adds task `index`'s outcome to the batch's counters: by status, done or failed, the first failures, usage. */
export function countOutcome(
  st: Omit<AgentBatchResult, 'total'>,
  index: number,
  workflowId: string,
  o: Pick<TaskOutcome, 'status' | 'tokens' | 'cost' | 'error' | 'cacheRead' | 'cacheWrite'>,
): void {
  st.byStatus[o.status] = (st.byStatus[o.status] ?? 0) + 1;
  if (o.status === 'completed' || o.status === 'stopped') st.done += 1;
  else {
    st.failed += 1;
    if (st.failures.length < MAX_FAILURES_KEPT)
      st.failures.push({ index, workflowId, status: o.status, ...(o.error ? { error: o.error } : {}) });
  }
  st.tokens += o.tokens;
  st.cost += o.cost;
  if (o.cacheRead) st.cacheRead = (st.cacheRead ?? 0) + o.cacheRead;
  if (o.cacheWrite) st.cacheWrite = (st.cacheWrite ?? 0) + o.cacheWrite;
}
