/**
 * A model request attempt of a run in a tree reserves its worst case from the tree's root before it calls the provider,
 * and settles its real usage after (common/tree/budget.ts, README "Budgets"). Both go through the worker's client
 * (`Context.current().client`): the `keelReserveBudget` Update, the `keelSettleBudget` signal. No workflow command of
 * the run changes: this happens inside its existing `callModel` / `compact` activity.
 */
import { Context, sleep } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { ErrorType, thrownMessage } from '../../common/errors.js';
import type { Usage } from '../../common/messages.js';
import { signalWithRetries } from '../signal-retries.js';
import {
  RESERVE_BUDGET_UPDATE,
  SETTLE_BUDGET_SIGNAL,
  type BudgetClaim,
  type ReserveAnswer,
  type TreeBudgetRef,
} from '../../common/tree/budget.js';

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
 * (`TreeBudgetUnavailable`), and Temporal's retries of the model call go on asking. A run that answers `wait` (0.6.3,
 * workflows/tree/budget.ts: only other reservations of the tree in flight keep this one out) is asked again after a
 * pause (200 ms doubling to 5 s) while the activity heartbeats, until `WAIT_MARGIN_MS` before the attempt's
 * `startToCloseTimeout`; then the attempt fails retryably (`TreeBudgetUnavailable`) and the next attempt waits on.
 * Whenever it fails — refused, cancelled, a run not answering, waited too long — what was granted is released
 * (settled at zero): no provider call was made.
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

/**
 * How long before its `startToCloseTimeout` an attempt stops waiting for room in the tree's budget (it then fails
 * retryably and the next attempt waits on), so a granted request still has time to run.
 */
export const WAIT_MARGIN_MS = 120_000;
/** The pause before asking again after a `wait` answer: 200 ms, doubling to {@link WAIT_MAX_MS}. */
export const WAIT_FIRST_MS = 200;
export const WAIT_MAX_MS = 5_000;

async function reserveFrom(workflowId: string, rootWorkflowId: string, claim: BudgetClaim): Promise<ReserveAnswer> {
  const ctx = Context.current();
  const handle = ctx.client.workflow.getHandle(workflowId);
  let giveUpAt = Date.now() + RESERVE_PATIENCE_MS;
  const waitUntil = Date.now() + Math.max(ctx.info.startToCloseTimeoutMs - WAIT_MARGIN_MS, WAIT_MARGIN_MS / 4);
  let wait = 250;
  let pause = WAIT_FIRST_MS;
  for (;;) {
    try {
      const update = handle.executeUpdate<ReserveAnswer, [BudgetClaim]>(RESERVE_BUDGET_UPDATE, { args: [claim] });
      update.catch(() => undefined); // still pending when the run is cancelled: its end is not ours to report
      // an Update to a run whose worker is down waits until one polls: a cancel (the run's interrupt) ends the wait
      const answer = await Promise.race([update, ctx.cancelled]);
      if (answer.granted || !answer.wait) return answer;
      // only reservations in flight keep it out (0.6.3): ask again once some may have settled
      giveUpAt = Date.now() + RESERVE_PATIENCE_MS;
      wait = 250;
      if (Date.now() + pause >= waitUntil)
        throw ApplicationFailure.retryable(
          `This model request waited for room in its tree's budget (run ${workflowId}) until its attempt's time was nearly up; the next attempt waits on`,
          ErrorType.TreeBudgetUnavailable,
        );
      await sleep(pause);
      pause = Math.min(pause * 2, WAIT_MAX_MS);
      continue;
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw new CancelledFailure('Operation aborted');
      if (err instanceof ApplicationFailure && err.type === ErrorType.TreeBudgetUnavailable) throw err;
      if (Date.now() >= giveUpAt)
        throw ApplicationFailure.retryable(
          workflowId === rootWorkflowId
            ? `The budget of this run's tree could not be reserved from its root ${workflowId}: ${thrownMessage(err)}`
            : `The budget of this run's tree could not be reserved from its ancestor ${workflowId}: ${thrownMessage(err)}`,
          ErrorType.TreeBudgetUnavailable,
        );
    }
    await sleep(wait);
    wait = Math.min(wait * 2, 10_000);
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
  await signalWithRetries(Context.current().client.workflow.getHandle(workflowId), SETTLE_BUDGET_SIGNAL, settled, 500);
}
