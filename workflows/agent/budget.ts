/**
 * A run's budget (README "Budgets"): checked before each model request and after it, from the session's usage (every
 * attempt, failed and lost ones included) and its count of model requests — both carried across continue-as-new.
 * Everything here changes the command sequence only for runs with a `budget` (or stopped by a batch's), behind
 * `patched('keel-budget')`: a 0.1.0 run has neither, so its history replays unchanged.
 */
import { patched } from '@temporalio/workflow';
import {
  BUDGET_WARNING_FRACTION,
  budgetExceededText,
  budgetLines,
  budgetReached,
  describeLine,
  remaining,
  spentOf,
  type Budget,
  type BudgetLine,
} from '../../common/budget.js';
import { addUsage, type Usage } from '../../common/messages.js';
import type { AgentEvent } from '../../common/events.js';
import type { CallModelInput } from '../../common/wire.js';
import type { SessionState } from './state.js';
import { estimateContext } from '../../common/compaction.js';
import {
  DEFAULT_RESERVED_OUTPUT_TOKENS,
  emptyLedger,
  TreeLedger,
  type TreeBudgetLine,
  type TreeBudgetRef,
} from '../../common/tree-budget.js';
import { treeMembership } from './tree.js';
import { batchMembership } from './report-to-batch.js';

/** How the budget reports `budget_warning` / `budget_exceeded` (the session's `emit`). */
export type Emit = (event: AgentEvent) => void;

/** The patch id guarding budget behaviour (stop points, the `BudgetExceeded` handling, `budgetLeft`). */
export const BUDGET_PATCH = 'keel-budget';

/** The run's budget, when it has one and this code path is patched in. */
function budgetOf(st: SessionState): Budget | undefined {
  const budget = st.config.budget;
  return budget && patched(BUDGET_PATCH) ? budget : undefined;
}

function lines(st: SessionState, budget: Budget): BudgetLine[] {
  return budgetLines(budget, spentOf(st.usage, st.modelCalls ?? 0));
}

/**
 * Before a model request: when a limit is reached (or a batch asked to stop) the run's `lastError` is set to the
 * `Budget exceeded: …` text and true is returned — the caller makes no request and ends the run. Otherwise the request
 * is counted and false returned.
 */
export function stopBeforeModelCall(st: SessionState, emit: Emit): boolean {
  const budget = budgetOf(st);
  const external = st.budgetStop !== undefined && patched(BUDGET_PATCH) ? st.budgetStop : undefined;
  // the root of a tree whose runs reserved from it: what they settled and reserve counts too
  const ledger = budget && st.treeLedger ? rootLedger(st) : undefined;
  const line = ledger
    ? ledger.reached()
    : budget
      ? budgetReached(budget, spentOf(st.usage, st.modelCalls ?? 0))
      : undefined;
  if (external !== undefined || line) {
    const error = external ?? (ledger ? ledger.text(line!) : budgetExceededText(line!));
    st.lastError = error;
    emit({ type: 'budget_exceeded', kind: line?.kind ?? (treeMembership() ? 'tree' : 'batch'), error });
    return true;
  }
  st.modelCalls = (st.modelCalls ?? 0) + 1;
  return false;
}

/** What a model request may still spend, for the activity to stop retrying once its failed attempts spent it. */
export function budgetLeft(st: SessionState): Pick<CallModelInput, 'budgetLeft' | 'treeBudget'> {
  const tree = treeBudgetRef(st);
  const budget = budgetOf(st);
  if (!budget || (budget.maxTokens === undefined && budget.maxCostUsd === undefined)) return tree;
  const spent = st.treeLedger ? rootLedger(st).committed() : spentOf(st.usage, st.modelCalls ?? 0);
  return { budgetLeft: remaining(budget, spent), ...tree };
}

/**
 * The ledger of a root run (common/tree-budget.ts): its own usage and model calls, plus what the runs of its tree
 * settled and reserve. Created by the first reservation a run of its tree makes (a run without one carries none).
 */
export function rootLedger(st: SessionState): TreeLedger {
  return new TreeLedger(
    st.config.budget,
    st.config.budget ? (st.treeLedger ??= emptyLedger()) : emptyLedger(),
    () => spentOf(st.usage, st.modelCalls ?? 0),
    'tree budget',
  );
}

/** A request's worst case in tokens: the context the run estimates plus the output it allows (`maxTokens`). */
function worstTokens(st: SessionState): number {
  const output = st.config.modelOptions?.maxTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS;
  return estimateContext(st.transcript, st.config.systemPrompt ?? '') + output;
}

/**
 * Where this run's model requests reserve from: the root of its sub-agent tree (memo `keelTree`), or its batch when
 * the batch keeps a ledger (memo `keelBatch` with `treeBudget`); nothing for a root run.
 */
function treeBudgetRef(st: SessionState): { treeBudget?: TreeBudgetRef } {
  const tree = treeMembership();
  const root = tree?.rootWorkflowId ?? treeBatchRoot();
  const ancestors = tree?.budgetedAncestors?.length ? { ancestorWorkflowIds: tree.budgetedAncestors } : {};
  return root ? { treeBudget: { rootWorkflowId: root, ...ancestors, worstTokens: worstTokens(st) } } : {};
}

function treeBatchRoot(): string | undefined {
  const m = batchMembership();
  return m?.treeBudget ? m.workflowId : undefined;
}

/** A root's own model request in flight, reserved in its own ledger (no command) while its tree reserves from it. */
export function holdOwnRequest(st: SessionState): void {
  if (st.treeLedger && st.config.budget) rootLedger(st).hold({ tokens: worstTokens(st), costUsd: 0, modelCalls: 0 });
}

/** The root's own request settled (its usage is in the session's). */
export function releaseOwnRequest(st: SessionState): void {
  if (st.treeLedger) rootLedger(st).release();
}

/** A refusal from the tree's root (`TreeBudgetExceeded`): the run stops before its next request with that text. */
export function treeRefused(st: SessionState, text: string): void {
  st.budgetStop ??= text;
}

/** The `state` query's `treeBudget` of a root whose tree reserved from it: each limit's spent, reserved and limit. */
export function treeBudgetState(st: SessionState): { treeBudget?: TreeBudgetLine[] } {
  return st.treeLedger && st.config.budget ? { treeBudget: rootLedger(st).lines() } : {};
}

/** After a model request: its usage (every attempt) counts; a `budget_warning` event, once per limit, when it passed 80 %. */
export function spend(st: SessionState, emit: Emit, ...usages: (Usage | undefined)[]): void {
  for (const usage of usages) st.usage = addUsage(st.usage, usage);
  const budget = budgetOf(st);
  if (!budget) return;
  const warned = (st.budgetWarned ??= []);
  for (const line of lines(st, budget)) {
    if (line.used < line.limit * BUDGET_WARNING_FRACTION || warned.includes(line.kind)) continue;
    warned.push(line.kind);
    emit({ type: 'budget_warning', kind: line.kind, used: line.used, limit: line.limit });
  }
}

/** The `state` query's `budget`: each limit with what was spent. */
export function budgetState(st: SessionState): { budget?: BudgetLine[] } {
  const budget = st.config.budget;
  return budget ? { budget: lines(st, budget) } : {};
}

/** Lines of the current details: `budget: tokens 850 of 1000 (85 %) — over 80 %`. No I/O, no commands. */
export function budgetDetails(st: SessionState): string[] {
  const budget = st.config.budget;
  if (!budget) return [];
  const tree = treeBudgetState(st).treeBudget;
  const treeLine = tree?.length
    ? [
        `tree budget: ${tree.map((l) => `${l.kind} ${l.spent} spent + ${l.reserved} reserved of ${l.limit}`).join(' · ')}`,
      ]
    : [];
  const parts = lines(st, budget).map((l) => {
    const pct = Math.floor((l.used / l.limit) * 100);
    return `${describeLine(l)} (${pct} %)${l.used >= l.limit ? ' — reached' : l.used >= l.limit * BUDGET_WARNING_FRACTION ? ' — over 80 %' : ''}`;
  });
  return parts.length ? [`budget: ${parts.join(' · ')}`, ...treeLine] : treeLine;
}
