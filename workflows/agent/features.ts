/**
 * What a run uses, decided once when its session starts (every run, so again after continue-as-new), as one read-only
 * record: the hot path asks it and skips what the run does not use (docs/architecture.md#what-a-run-pays-for). A run
 * outside any tree and batch no longer reads the `keelTree` and `keelBatch` memos at every model call and status
 * change, nor builds a tree-budget reference or a report to a root it does not have. Nothing in it changes within a
 * run: the memos are set when the run starts and carried by continue-as-new.
 * Reading it instead of the memos changes no command.
 */
import { batchMembership, type BatchMembership } from '../batch-protocol.js';
import type { TreeMembership } from '../../common/tree/membership.js';
import { treeMembership } from '../tree/membership.js';

export interface RunFeatures {
  /** Memo `keelTree`: the run is a sub-agent; its tree's root keeps the desk and, with a budget, the ledger. */
  readonly tree?: TreeMembership;
  /** Memo `keelBatch`: the run is a batch's task; the batch is its desk, and its ledger when `treeBudget`. */
  readonly batch?: BatchMembership;
  /** Where the run's model requests reserve their worst case from (a tree's root, a batch's ledger), if anywhere. */
  readonly reservesFrom?: string;
  /** A tree's root or a batch hears about the run's calls awaiting approval (`keelTreeApprovals`). */
  readonly reportsApprovals: boolean;
  /**
   * Memo `keelTree` or `keelBatch` with `leanStart` (0.12.0): a sub-agent or a batch's task started lean — its input
   * checked in a local activity, the 0.3.0 and 0.4.0 visibility patches (and a batch task's 0.4.0 sliding-window patch)
   * implied, no marker; a sub-agent's parent sets its search attributes in its start.
   */
  readonly leanStart: boolean;
}

/** The features of the run now starting (in the workflow, at the session's start: reads `workflowInfo().memo`). */
export function runFeatures(): RunFeatures {
  const tree = treeMembership();
  const batch = batchMembership();
  // 0.8.0 (keel-0.8-sub-agent-calls): a tree whose root keeps no budget, and no budgeted ancestor, reserves from no
  // one — its memo says so (`rootBudgeted: false`); a memo written before has no such field and reserves as before
  const unbudgetedTree = tree?.rootBudgeted === false && !tree.budgetedAncestors?.length;
  const reservesFrom = unbudgetedTree
    ? undefined
    : (tree?.rootWorkflowId ?? (batch?.treeBudget ? batch.workflowId : undefined));
  return Object.freeze({
    ...(tree ? { tree } : {}),
    ...(batch ? { batch } : {}),
    ...(reservesFrom !== undefined ? { reservesFrom } : {}),
    reportsApprovals: tree !== undefined || batch !== undefined,
    leanStart: tree?.leanStart === true || batch?.leanStart === true,
  });
}
