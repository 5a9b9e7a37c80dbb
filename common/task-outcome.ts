/**
 * A batch task's compact outcome, built the same way wherever it is read (the workflow's child completion, the
 * reconciliation activity): from a run's result, or a bare status with an error text. Error texts are clipped to 300
 * characters (the child's own result has the whole text).
 */
import type { AgentRunResult, RunStatus } from './run.js';

/** A finished task's status as a batch packs it: its index here. */
export const STATUS_CODES: RunStatus[] = ['completed', 'stopped', 'failed', 'cancelled'];

/** One finished task: [status code (index in STATUS_CODES), turns, tokens, cost in dollars]. */
export type PackedOutcome = [code: number, turns: number, tokens: number, cost: number];

export interface TaskOutcome {
  status: RunStatus;
  turns: number;
  tokens: number;
  cost: number;
  modelCalls: number;
  /** Input tokens read from / written to the provider's prompt cache (absent when none). */
  cacheRead?: number;
  cacheWrite?: number;
  error?: string;
}

export function clipError(text: string): string {
  return text.length > 300 ? `${text.slice(0, 299)}…` : text;
}

/** The outcome of a run that returned (or failed with) `r`; `status` overrides the result's own. */
export function outcomeOfResult(r: AgentRunResult, status: RunStatus = r.status): TaskOutcome {
  return {
    status,
    turns: r.turns ?? 0,
    tokens: r.usage?.totalTokens ?? 0,
    cost: r.usage?.cost?.total ?? 0,
    modelCalls: r.modelCalls ?? 0,
    ...(r.usage?.cacheRead ? { cacheRead: r.usage.cacheRead } : {}),
    ...(r.usage?.cacheWrite ? { cacheWrite: r.usage.cacheWrite } : {}),
    ...(r.error ? { error: clipError(r.error) } : {}),
  };
}

/** The outcome of a run that left no result: nothing spent that the batch can see. */
export function bareOutcome(status: RunStatus, error: string): TaskOutcome {
  return { status, turns: 0, tokens: 0, cost: 0, modelCalls: 0, error: clipError(error) };
}
