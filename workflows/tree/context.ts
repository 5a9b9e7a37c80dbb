/**
 * `RunTree`: what the session's loop asks of the sub-agent tree (README "Sub-agents"), in one object the session holds
 * (`AgentSession.tree`). The turn loop, the model step, the tool batch, the budget and the approval desk ask it instead
 * of reading the tree's memos (`keelTree`, a batch's `keelBatch`) or calling the tree room's files themselves. Every
 * answer comes from the run's features (workflows/agent/features.ts: the memos, read once when the session starts;
 * deterministic, no command): a run outside any tree and batch skips the tree.
 */
import type { ToolCall } from '../../common/messages.js';
import type { TreeBudgetRef } from '../../common/tree/budget.js';
import type { TreeMembership } from '../../common/tree/membership.js';
import type { SubAgentRecord, ToolInfo, ToolOutcome } from '../../common/wire.js';
import type { SessionState, StoredApprovalRecord, StoredPendingApproval } from '../agent/state.js';
import { reportToRoot, subAgentRefusal } from './approvals.js';
import type { RunFeatures } from '../agent/features.js';
import { directCall, runSubAgent, subAgentChildId, type SubAgentHost } from './sub-agent.js';

/** This run's place in a tree and the few operations its session needs of it. */
export class RunTree {
  /**
   * `st`: the session's carried state, of which the tree owns `treeReported` and reads the root's desk slice;
   * `features`: the run's tree and batch membership.
   */
  constructor(
    private readonly st: SessionState,
    private readonly features: RunFeatures,
  ) {}

  /** The tree this run belongs to as a sub-agent (memo `keelTree`), or undefined for a root run. */
  membership(): TreeMembership | undefined {
    return this.features.tree;
  }

  /** Whether this run is a sub-agent of a tree (a root run, or a batch's task, is not). */
  isSubAgent(): boolean {
    return this.membership() !== undefined;
  }

  /**
   * Where this run's model requests reserve from: the root of its sub-agent tree (memo `keelTree`), or its batch when
   * the batch keeps a ledger (memo `keelBatch` with `treeBudget`); nothing for a root run. `worstTokens`: the
   * request's worst case.
   */
  budgetRef(worstTokens: () => number): { treeBudget?: TreeBudgetRef } {
    const root = this.features.reservesFrom;
    if (!root) return {};
    const tree = this.features.tree;
    const ancestors = tree?.budgetedAncestors?.length ? { ancestorWorkflowIds: tree.budgetedAncestors } : {};
    return { treeBudget: { rootWorkflowId: root, ...ancestors, worstTokens: worstTokens() } };
  }

  /** A sub-agent (or a batch's task) whose pending calls changed tells its tree's root (records what it reported). */
  reportPending(pending: readonly StoredPendingApproval[], records: readonly StoredApprovalRecord[]): void {
    if (!this.features.reportsApprovals) return; // no root to tell
    const reported = reportToRoot(pending, records, this.st.treeReported);
    if (reported !== this.st.treeReported) this.st.treeReported = reported;
  }

  /** The root's refusal of a decision sent to it for a sub-agent's call; undefined when no sub-agent has that call. */
  refusalFor(toolCallId: string): string | undefined {
    return subAgentRefusal(this.st, toolCallId);
  }

  /** Runs a sub-agent call as a child run (workflows/tree/sub-agent.ts); never throws. */
  runSubAgent(
    h: SubAgentHost,
    call: ToolCall,
    info: ToolInfo & { agent: SubAgentRecord },
    args: unknown,
  ): Promise<ToolOutcome> {
    return runSubAgent(h, call, info, args, {
      searchAttributes: this.st.searchAttributes === true,
      local: this.st.noLocalActivities !== true,
    });
  }

  /** Whether a sub-agent call starts its child without the preparation activity (0.8.0; workflows/tree/sub-agent.ts). */
  direct(call: ToolCall, info: ToolInfo & { agent: SubAgentRecord }): boolean {
    return directCall(call, info.agent);
  }

  /** The child workflow id of a sub-agent call. */
  childId(call: ToolCall): string {
    return subAgentChildId(call);
  }
}
