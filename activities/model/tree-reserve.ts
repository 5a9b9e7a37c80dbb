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
 * Reserves this attempt's worst case from the root, then from each budgeted ancestor below it (`ancestorWorkflowIds`,
 * top down). Refused by any of them, the attempt fails with a non-retryable `TreeBudgetExceeded` failure carrying the
 * refusing run's `Budget exceeded: …` text. A run that does not answer (not reachable, or gone) is asked again with
 * backoff while the activity heartbeats; after `RESERVE_PATIENCE_MS` the attempt fails retryably
 * (`TreeBudgetUnavailable`), and Temporal's retries of the model call go on asking. Whenever it fails — refused,
 * cancelled, a run not answering — what was granted is released (settled at zero): no provider call was made.
 */
export async function reserveFromRoot(ref: TreeBudgetRef, key: string): Promise<BudgetClaim> {
  const ctx = Context.current();
  const claim: BudgetClaim = { key, tokens: ref.worstTokens, costUsd: 0, modelCalls: ctx.info.attempt === 1 ? 1 : 0 };
  const asked: string[] = [];
  try {
    for (const workflowId of reservingRuns(ref)) {
      asked.push(workflowId);
      const answer = await reserveFrom(workflowId, ref.rootWorkflowId, claim);
      if (!answer.granted) throw ApplicationFailure.nonRetryable(answer.error, ErrorType.TreeBudgetExceeded);
    }
    return claim;
  } catch (err) {
    // no provider call was made: released (settled at zero) wherever it may have been granted — a refusal further
    // down, a cancel or a run that did not answer (a ledger ignores a key it does not hold)
    await Promise.all(asked.map((id) => settleWith(id, { ...claim, tokens: 0, costUsd: 0, modelCalls: 0 })));
    throw err;
  }
}

/** The runs an attempt reserves from: the root, then its budgeted ancestors below the root. */
function reservingRuns(ref: TreeBudgetRef): string[] {
  return [ref.rootWorkflowId, ...(ref.ancestorWorkflowIds ?? []).filter((id) => id !== ref.rootWorkflowId)];
}

async function reserveFrom(workflowId: string, rootWorkflowId: string, claim: BudgetClaim): Promise<ReserveAnswer> {
  const ctx = Context.current();
  const handle = ctx.client.workflow.getHandle(workflowId);
  const giveUpAt = Date.now() + RESERVE_PATIENCE_MS;
  let wait = 250;
  for (;;) {
    try {
      const update = handle.executeUpdate<ReserveAnswer, [BudgetClaim]>(RESERVE_BUDGET_UPDATE, { args: [claim] });
      update.catch(() => undefined); // still pending when the run is cancelled: its end is not ours to report
      // an Update to a run whose worker is down waits until one polls: a cancel (the run's interrupt) ends the wait
      return await Promise.race([update, ctx.cancelled]);
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure('Operation aborted');
      if (Date.now() >= giveUpAt)
        throw ApplicationFailure.retryable(
          workflowId === rootWorkflowId
            ? `The budget of this run's tree could not be reserved from its root ${workflowId}: ${thrownMessage(err)}`
            : `The budget of this run's tree could not be reserved from its ancestor ${workflowId}: ${thrownMessage(err)}`,
          ErrorType.TreeBudgetUnavailable,
        );
      await sleep(wait);
      wait = Math.min(wait * 2, 10_000);
    }
  }
}

/**
 * Settles a granted reservation with the attempt's real usage, with the root and each budgeted ancestor (never
 * throws: a settlement that cannot be sent leaves the reservation counted in full — over-counted, never under).
 */
export async function settleWithRoot(ref: TreeBudgetRef, claim: BudgetClaim, usage: Usage | undefined): Promise<void> {
  const settled: BudgetClaim = {
    key: claim.key,
    tokens: usage?.totalTokens ?? 0,
    costUsd: usage?.cost.total ?? 0,
    modelCalls: claim.modelCalls,
  };
  await Promise.all(reservingRuns(ref).map((id) => settleWith(id, settled)));
}

async function settleWith(workflowId: string, settled: BudgetClaim): Promise<void> {
  const handle = Context.current().client.workflow.getHandle(workflowId);
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      await handle.signal(SETTLE_BUDGET_SIGNAL, settled);
      return;
    } catch {
      if (attempt < 3) await new Promise((r) => setTimeout(r, 500 * attempt));
    }
  }
}
