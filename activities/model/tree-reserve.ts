/**
 * A model request attempt of a run in a tree reserves its worst case from the tree's root before it calls the provider,
 * and settles its real usage after (common/tree-budget.ts, README "Budgets"). Both go through the worker's client
 * (`Context.current().client`): the `keelReserveBudget` Update, the `keelSettleBudget` signal. No workflow command of
 * the run changes: this happens inside its existing `callModel` / `compact` activity.
 */
import { Context, sleep } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { ErrorType, thrownMessage } from '../../common/errors.js';
import type { Usage } from '../../common/messages.js';
import {
  RESERVE_BUDGET_UPDATE,
  SETTLE_BUDGET_SIGNAL,
  type BudgetClaim,
  type ReserveAnswer,
  type TreeBudgetRef,
} from '../../common/tree-budget.js';

/** How long a reservation waits for a root that does not answer (a bad minute of the store or the network). */
export const RESERVE_PATIENCE_MS = 120_000;

/** This attempt's key: `<workflowId>/<runId>/<activityId>/<attempt>`. */
export function attemptKey(ctx: Context): string {
  const { workflowExecution, activityId, attempt } = ctx.info;
  return `${workflowExecution?.workflowId}/${workflowExecution?.runId}/${activityId}/${attempt}`;
}

/**
 * Reserves this attempt's worst case from the root. Refused: a non-retryable `TreeBudgetExceeded` failure with the
 * root's `Budget exceeded: …` text. A root that does not answer (not reachable, or gone) is asked again with backoff
 * while the activity heartbeats; after `RESERVE_PATIENCE_MS` the attempt fails retryably (`TreeBudgetUnavailable`),
 * and Temporal's retries of the model call go on asking.
 */
export async function reserveFromRoot(ref: TreeBudgetRef, key: string): Promise<BudgetClaim> {
  const ctx = Context.current();
  const claim: BudgetClaim = { key, tokens: ref.worstTokens, costUsd: 0, modelCalls: ctx.info.attempt === 1 ? 1 : 0 };
  const handle = ctx.client.workflow.getHandle(ref.rootWorkflowId);
  const giveUpAt = Date.now() + RESERVE_PATIENCE_MS;
  let wait = 250;
  for (;;) {
    let answer: ReserveAnswer;
    try {
      answer = await handle.executeUpdate<ReserveAnswer, [BudgetClaim]>(RESERVE_BUDGET_UPDATE, { args: [claim] });
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure('Operation aborted');
      if (Date.now() >= giveUpAt)
        throw ApplicationFailure.retryable(
          `The budget of this run's tree could not be reserved from its root ${ref.rootWorkflowId}: ${thrownMessage(err)}`,
          ErrorType.TreeBudgetUnavailable,
        );
      await sleep(wait);
      wait = Math.min(wait * 2, 10_000);
      continue;
    }
    if (!answer.granted) throw ApplicationFailure.nonRetryable(answer.error, ErrorType.TreeBudgetExceeded);
    return claim;
  }
}

/**
 * Settles a granted reservation with the attempt's real usage (never throws: a settlement that cannot be sent leaves
 * the reservation counted in full — over-counted, never under).
 */
export async function settleWithRoot(ref: TreeBudgetRef, claim: BudgetClaim, usage: Usage | undefined): Promise<void> {
  const settled: BudgetClaim = {
    key: claim.key,
    tokens: usage?.totalTokens ?? 0,
    costUsd: usage?.cost.total ?? 0,
    modelCalls: claim.modelCalls,
  };
  const handle = Context.current().client.workflow.getHandle(ref.rootWorkflowId);
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      await handle.signal(SETTLE_BUDGET_SIGNAL, settled);
      return;
    } catch {
      if (attempt < 3) await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }
}
