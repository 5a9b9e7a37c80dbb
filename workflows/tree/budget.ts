/**
 * The root's side of a tree budget (common/tree/budget.ts): the `keelReserveBudget` Update and the `keelSettleBudget`
 * signal, answered from the root's ledger. Registered by `agentWorkflow` (a sub-agent tree's root) and
 * `agentBatchWorkflow` (its tasks' root). Registering handlers issues no command; an Update or a signal received is
 * an event of the root's history, so only runs that have children reserving from them see any.
 *
 * Since 0.6.3 (`since(PATCH.treeBudgetWaits)`, asked only when the 0.6.0 rule refuses a reservation while the
 * settled spend is below every limit): such a reservation — kept out only by other reservations in flight — is
 * answered `wait` instead (nothing recorded), and the reserving activity asks again after a pause, heartbeating, until
 * it is granted or the settled spend reaches a limit. Each answer is at once: a waiting Update held open by the root
 * would count against the server's limit of Updates in flight per workflow (10 by default).
 */
import { defineSignal, defineUpdate, setHandler } from '@temporalio/workflow';
import {
  asClaim,
  RESERVE_BUDGET_UPDATE,
  SETTLE_BUDGET_SIGNAL,
  type BudgetClaim,
  type ReserveAnswer,
  type TreeLedger,
} from '../../common/tree/budget.js';
import { PATCH } from '../patches.js';
import { since } from '../since.js';

export const reserveBudgetUpdate = defineUpdate<ReserveAnswer, [BudgetClaim]>(RESERVE_BUDGET_UPDATE);
export const settleBudgetSignal = defineSignal<[BudgetClaim]>(SETTLE_BUDGET_SIGNAL);

/** Answers reservations and settlements from `ledger()` (called per message: the ledger may be created lazily). */
export function registerTreeBudget(ledger: () => TreeLedger): void {
  setHandler(reserveBudgetUpdate, (claim) => reserve(ledger(), claim), {
    validator: (claim) => {
      if (!asClaim(claim)) throw new Error('keelReserveBudget: malformed reservation');
    },
    description:
      'From a run of this tree, before a model request attempt: reserve { key, tokens, costUsd, modelCalls } → { granted } or { granted: false, error, wait? } (wait: ask again once reservations in flight settled).',
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

/** The 0.6.0 rule; since 0.6.3 a refusal while only reservations fill the budget says `wait`. */
function reserve(ledger: TreeLedger, claim: BudgetClaim): ReserveAnswer {
  const answer = ledger.reserve(claim);
  if (answer.granted || !ledger.onlyReserved() || !since(PATCH.treeBudgetWaits)) return answer;
  return { ...answer, wait: true };
}
