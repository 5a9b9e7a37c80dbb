/**
 * The root's side of a tree budget (common/tree-budget.ts): the `keelReserveBudget` Update and the `keelSettleBudget`
 * signal, answered from the root's ledger. Registered by `agentWorkflow` (a sub-agent tree's root) and
 * `agentBatchWorkflow` (its tasks' root). Registering handlers issues no command; an Update or a signal received is
 * an event of the root's history, so only runs that have children reserving from them see any.
 *
 * Since 0.6.3 (`patched(PATCH.treeBudgetWaits)`, asked only when the 0.6.0 rule would refuse a reservation that the
 * settled spend alone does not): a reservation refused only because other reservations are in flight waits, in the
 * Update handler, until they settle — first come, first served — and is refused only once the settled spend reaches a
 * limit. The wait is durable (the accepted Update is in the root's history; a replay waits again) and ends when the
 * reserving attempt withdraws (cancelled: it settles the key at zero), when a later attempt of the same request
 * reserves, or when the root closes or continues as new (answered `again`: the attempt asks the next run).
 */
import { condition, defineSignal, defineUpdate, patched, setHandler } from '@temporalio/workflow';
import { HandlerUnfinishedPolicy } from '@temporalio/common';
import {
  asClaim,
  RESERVE_BUDGET_UPDATE,
  SETTLE_BUDGET_SIGNAL,
  splitKey,
  type BudgetClaim,
  type ReserveAnswer,
  type TreeLedger,
} from '../common/tree-budget.js';
import { PATCH } from './patches.js';

export const reserveBudgetUpdate = defineUpdate<ReserveAnswer, [BudgetClaim]>(RESERVE_BUDGET_UPDATE);
export const settleBudgetSignal = defineSignal<[BudgetClaim]>(SETTLE_BUDGET_SIGNAL);

/** A reservation waiting for room (in memory: rebuilt by replaying the accepted Updates). */
interface Waiter {
  claim: BudgetClaim;
  /** Why it stopped waiting without an answer of the ledger's. */
  ended?: 'withdrawn' | 'superseded';
}

/** What a withdrawn or superseded waiter answers (read by nobody: its attempt is gone). */
const WITHDRAWN = 'The reservation was withdrawn before it was granted';

/**
 * Answers reservations and settlements from `ledger()` (called per message: the ledger may be created lazily).
 * `closing()`: true once the root closes or continues as new (waiting reservations are then answered `again`).
 */
export function registerTreeBudget(ledger: () => TreeLedger, closing: () => boolean = () => false): void {
  const queue: Waiter[] = [];
  setHandler(reserveBudgetUpdate, (claim) => reserve(ledger, queue, closing, claim), {
    validator: (claim) => {
      if (!asClaim(claim)) throw new Error('keelReserveBudget: malformed reservation');
    },
    // a waiting reservation left when a batch continues as new: its attempt asks the next run
    unfinishedPolicy: HandlerUnfinishedPolicy.ABANDON,
    description:
      'From a run of this tree, before a model request attempt: reserve { key, tokens, costUsd, modelCalls } → { granted } or { granted: false, error }; waits while only reservations in flight fill the budget.',
  });
  setHandler(
    settleBudgetSignal,
    (claim) => {
      const c = asClaim(claim);
      if (!c) return;
      const waiting = queue.find((w) => w.claim.key === c.key && !w.ended);
      if (waiting) waiting.ended = 'withdrawn';
      else ledger().settle(c);
    },
    { description: 'From a run of this tree, after a model request attempt: its real usage replaces its reservation.' },
  );
}

function reserve(
  ledger: () => TreeLedger,
  queue: Waiter[],
  closing: () => boolean,
  claim: BudgetClaim,
): ReserveAnswer | Promise<ReserveAnswer> {
  supersede(ledger, queue, claim.key);
  if (queue.length === 0) {
    const answer = ledger().reserve(claim); // the 0.6.0 rule
    if (answer.granted || !ledger().onlyReserved() || !patched(PATCH.treeBudgetWaits)) return answer;
  }
  // nobody waits only on a worker with this patch: every later claim queues behind the waiting ones
  return wait(ledger, queue, closing, claim);
}

/** Earlier attempts of the same request still waiting were given up (timed out): their model call counts once. */
function supersede(ledger: () => TreeLedger, queue: Waiter[], key: string): void {
  const { request, attempt } = splitKey(key);
  for (const w of queue) {
    const other = splitKey(w.claim.key);
    if (w.ended || other.request !== request || other.attempt >= attempt) continue;
    w.ended = 'superseded';
    if (w.claim.modelCalls) ledger().addSpent({ tokens: 0, costUsd: 0, modelCalls: w.claim.modelCalls });
  }
}

async function wait(
  ledger: () => TreeLedger,
  queue: Waiter[],
  closing: () => boolean,
  claim: BudgetClaim,
): Promise<ReserveAnswer> {
  const w: Waiter = { claim };
  queue.push(w);
  try {
    for (;;) {
      await condition(() => !!w.ended || closing() || (firstWaiting(queue) === w && !ledger().onlyReserved()));
      if (w.ended) return { granted: false, error: WITHDRAWN };
      if (closing())
        return {
          granted: false,
          again: true,
          error: 'The tree budget’s root closed or continued as new while this reservation waited: ask again',
        };
      const answer = ledger().admit(claim);
      if (answer !== 'wait') return answer;
    }
  } finally {
    queue.splice(queue.indexOf(w), 1);
  }
}

function firstWaiting(queue: Waiter[]): Waiter | undefined {
  return queue.find((w) => !w.ended);
}
