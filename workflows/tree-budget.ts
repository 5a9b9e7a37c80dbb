/**
 * The root's side of a tree budget (common/tree-budget.ts): the `keelReserveBudget` Update and the `keelSettleBudget`
 * signal, answered from the root's ledger. Registered by `agentWorkflow` (a sub-agent tree's root) and
 * `agentBatchWorkflow` (its tasks' root). Registering handlers issues no command; an Update or a signal received is
 * an event of the root's history, so only runs that have children reserving from them see any.
 */
import { defineSignal, defineUpdate, setHandler } from '@temporalio/workflow';
import {
  asClaim,
  RESERVE_BUDGET_UPDATE,
  SETTLE_BUDGET_SIGNAL,
  type BudgetClaim,
  type ReserveAnswer,
  type TreeLedger,
} from '../common/tree-budget.js';

export const reserveBudgetUpdate = defineUpdate<ReserveAnswer, [BudgetClaim]>(RESERVE_BUDGET_UPDATE);
export const settleBudgetSignal = defineSignal<[BudgetClaim]>(SETTLE_BUDGET_SIGNAL);

/** Answers reservations and settlements from `ledger()` (called per message: the ledger may be created lazily). */
export function registerTreeBudget(ledger: () => TreeLedger): void {
  setHandler(reserveBudgetUpdate, (claim) => ledger().reserve(claim), {
    validator: (claim) => {
      if (!asClaim(claim)) throw new Error('keelReserveBudget: malformed reservation');
    },
    description:
      'From a run of this tree, before a model request attempt: reserve { key, tokens, costUsd, modelCalls } → { granted } or { granted: false, error }.',
  });
  setHandler(
    settleBudgetSignal,
    (claim) => {
      const c = asClaim(claim);
      if (c) ledger().settle(c);
    },
    { description: 'From a run of this tree, after a model request attempt: its real usage replaces its reservation.' },
  );
}
