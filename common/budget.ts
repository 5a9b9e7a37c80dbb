/**
 * Spend budgets (plain, deterministic arithmetic shared by the workflows and the model activity). A budget limits what
 * a run — or a whole batch — may spend: tokens, US dollars, model calls. Spent amounts count every attempt, failed and
 * lost ones included; a model without prices costs 0, so only its tokens and calls count.
 */
import type { Static } from 'typebox';
import type { Usage } from './messages.js';
import type { BUDGET_SCHEMA } from './run-input-schema.js';

/** `budget` of a run or a batch. Each limit is optional; a limit is reached when the spent amount is ≥ it. */
export type Budget = Static<typeof BUDGET_SCHEMA>;

/** What was spent so far against a budget. */
export interface Spent {
  tokens: number;
  costUsd: number;
  modelCalls: number;
}

export type BudgetKind = 'tokens' | 'cost' | 'model calls';

/** One limit compared with what was spent. */
export interface BudgetLine {
  kind: BudgetKind;
  used: number;
  limit: number;
}

/** The fraction of a limit at which a warning event is emitted and the current details say so. */
export const BUDGET_WARNING_FRACTION = 0.8;

export function spentOf(usage: Usage, modelCalls: number): Spent {
  return { tokens: usage.totalTokens, costUsd: usage.cost.total, modelCalls };
}

/** Each limit the budget sets, with what was spent against it, in the order tokens, cost, model calls. */
export function budgetLines(budget: Budget, spent: Spent): BudgetLine[] {
  const lines: BudgetLine[] = [];
  if (budget.maxTokens !== undefined) lines.push({ kind: 'tokens', used: spent.tokens, limit: budget.maxTokens });
  if (budget.maxCostUsd !== undefined)
    lines.push({ kind: 'cost', used: roundUsd(spent.costUsd), limit: budget.maxCostUsd });
  if (budget.maxModelCalls !== undefined)
    lines.push({ kind: 'model calls', used: spent.modelCalls, limit: budget.maxModelCalls });
  return lines;
}

/** The first limit reached (used ≥ limit), if any. */
export function budgetReached(budget: Budget | undefined, spent: Spent): BudgetLine | undefined {
  return budget ? budgetLines(budget, spent).find((l) => l.used >= l.limit) : undefined;
}

/** `tokens 1500 of 1500`, `cost 0.0125 of 0.01` (US dollars), `model calls 3 of 3`. */
export function describeLine(line: BudgetLine): string {
  return `${line.kind} ${line.used} of ${line.limit}`;
}

/** The run's `error` when a limit stopped it: `Budget exceeded: tokens 1500 of 1500`. */
export function budgetExceededText(line: BudgetLine, scope?: string): string {
  return `Budget exceeded: ${describeLine(line)}${scope ? ` (${scope})` : ''}`;
}

/** Limits left to spend (for the model activity, which stops retrying once its failed attempts spent them). */
export function remaining(budget: Budget, spent: Spent): { tokens?: number; costUsd?: number } {
  return {
    ...(budget.maxTokens !== undefined ? { tokens: budget.maxTokens - spent.tokens } : {}),
    ...(budget.maxCostUsd !== undefined ? { costUsd: budget.maxCostUsd - spent.costUsd } : {}),
  };
}

/** The smaller of two budgets, limit by limit (a batch task's own budget within what is left of the batch's). */
export function tighter(a: Budget | undefined, b: Budget): Budget {
  const min = (x: number | undefined, y: number | undefined) =>
    x === undefined ? y : y === undefined ? x : Math.min(x, y);
  const out: Budget = {};
  const tokens = min(a?.maxTokens, b.maxTokens);
  const cost = min(a?.maxCostUsd, b.maxCostUsd);
  const calls = min(a?.maxModelCalls, b.maxModelCalls);
  if (tokens !== undefined) out.maxTokens = tokens;
  if (cost !== undefined) out.maxCostUsd = cost;
  if (calls !== undefined) out.maxModelCalls = calls;
  return out;
}

function roundUsd(x: number): number {
  return Math.round(x * 1e6) / 1e6;
}
