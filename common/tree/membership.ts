/**
 * A sub-agent's place in its tree (README "Sub-agents"). A sub-agent is a child `agentWorkflow` its parent's workflow
 * starts for one tool call, with the memo `keelTree` set to a `TreeMembership`; a run without that memo is a root.
 * Plain JSON types, shared by the workflow, the activities and the client.
 */

/** Where a sub-agent sits in its tree (the memo `keelTree` its parent set). */
export interface TreeMembership {
  /** The workflow id of the tree's root run (or of the batch whose task started the tree). */
  rootWorkflowId: string;
  /** The workflow id of the run whose tool call started this one. */
  parentWorkflowId: string;
  /** The parent's tool call this run answers. */
  toolCallId: string;
  /** 1 for a child of the root, 2 for its child, … */
  depth: number;
  /** The tool-call labels from the root down to this run, each `<sub-agent> › <toolCallId>`. */
  path: string[];
  /**
   * The workflow ids of this run's ancestors below the root that have a budget of their own, from the top down (absent:
   * none). Each of this run's model requests reserves from each of them as well as from the root, so a sub-agent's
   * spend counts against every budgeted ancestor (common/tree/budget.ts).
   */
  budgetedAncestors?: string[];
  /**
   * The tool names this run's tree allows (0.6.3): its root run's `tools`, widened by an ancestor whose definition has
   * `ownTools`. A sub-agent of this run is offered only the tools of its definition within it. Absent (a memo set
   * before 0.6.3): this run's own `tools` bound its subtree.
   */
  tools?: string[];
  /**
   * Whether the tree's root keeps a budget (0.8.0, set by the parent: the root run's `budget`, a batch's tree-budget
   * ledger). False: with no `budgetedAncestors` either, this run's model requests reserve from no one (no Update, no
   * signal to the root). Absent (a memo set before 0.8.0): taken as true, every request reserves from the root.
   */
  rootBudgeted?: boolean;
  /**
   * 0.12.0 (set by a parent under `keel-0.12-lean-sub-agent-start`): the child starts lean — its input checked in a local
   * activity, its Keel search attributes set in its start, no markers of the patches the parent's implies. Absent (a
   * memo set before 0.12.0, or by a parent replaying an older history): the child starts as before.
   */
  leanStart?: boolean;
}

/** The memo key holding a sub-agent's `TreeMembership`. */
export const TREE_MEMO_KEY = 'keelTree';

/** A `TreeMembership` read from an untyped memo value, or undefined when it is not one. */
export function asTreeMembership(value: unknown): TreeMembership | undefined {
  const m = value as Partial<TreeMembership> | undefined;
  return m &&
    typeof m.rootWorkflowId === 'string' &&
    typeof m.parentWorkflowId === 'string' &&
    typeof m.toolCallId === 'string' &&
    Number.isInteger(m.depth) &&
    Array.isArray(m.path) &&
    m.path.every((p) => typeof p === 'string') &&
    (m.budgetedAncestors === undefined ||
      (Array.isArray(m.budgetedAncestors) && m.budgetedAncestors.every((a) => typeof a === 'string'))) &&
    (m.tools === undefined || (Array.isArray(m.tools) && m.tools.every((a) => typeof a === 'string'))) &&
    (m.rootBudgeted === undefined || typeof m.rootBudgeted === 'boolean') &&
    (m.leanStart === undefined || typeof m.leanStart === 'boolean')
    ? (m as TreeMembership)
    : undefined;
}
