/**
 * One approval desk for a sub-agent tree (README "Sub-agents"): a sub-agent whose call waits for approval reports its
 * pending calls to the tree's root (signal `keelTreeApprovals`), the root lists them in `state().pendingApprovals`
 * with the sub-agent's `workflowId` and `path`, and a decision sent through the root is routed to the sub-agent,
 * which alone decides (its digest rules, verification and audit record). Plain JSON; shared by the workflow, the
 * client and the CLI.
 */
import type { ApprovalRecord, PendingApproval } from '../updates.js';

/** Sub-agent → root: its pending calls now (the whole list, replacing the last), and the calls decided since. */
export interface TreeApprovalsReport {
  /** The sub-agent's workflow id (where `approve` / `deny` go). */
  workflowId: string;
  /**
   * The first run id of the sub-agent's continue-as-new chain: a later run under the same workflow id (a parent that
   * repeats a tool call id) is another sub-agent, whose `seq` starts again.
   */
  runKey: string;
  /** The tool-call labels from the root down to the sub-agent (its memo `keelTree.path`). */
  path: string[];
  /** Increases with every report of this sub-agent (across its continue-as-new): the root keeps the newest list. */
  seq: number;
  /** Every call of the sub-agent awaiting approval now. */
  pending: PendingApproval[];
  /** The decision records of calls listed before and decided since (approved, denied, timed out, aborted). */
  decided: ApprovalRecord[];
}

/** The path as the CLI and the Web UI show it: `research › call_1 › critic › call_7`. */
export const pathText = (path: readonly string[]): string => path.join(' › ');

/** The root's `approve` / `deny` validator, for a call a sub-agent waits for (the client routes it instead). */
export const approvalInSubAgent = (toolCallId: string, p: Required<Pick<PendingApproval, 'workflowId' | 'path'>>) =>
  `Tool call ${toolCallId} awaits approval in sub-agent ${pathText(p.path)} (workflow ${p.workflowId}): send approve / deny to that workflow (AgentClient and keel approve on this run route it there)`;

/** Where a decision on `toolCallId` sent to run `workflowId` goes, from that run's `state()`. */
export type ApprovalRoute =
  /** To `workflowId` (the run itself, or the sub-agent whose call it is); `pending`: the call, if it still waits. */
  | { workflowId: string; pending?: PendingApproval }
  /** Several sub-agents wait for a call with this id: the refusal text naming them. */
  | { ambiguous: string };

/**
 * The route of a decision on `toolCallId` sent to run `workflowId`: the run's own pending call first, then a
 * sub-agent's pending call (by id; the only one with that id), then whoever decided it already (so a second decision
 * gets that run's `already approved by …`), else the run itself (it answers `No tool call … is awaiting approval`).
 */
export function approvalRoute(
  workflowId: string,
  st: { pendingApprovals: PendingApproval[]; approvals: ApprovalRecord[] },
  toolCallId: string,
): ApprovalRoute {
  const own = st.pendingApprovals.find((p) => p.toolCallId === toolCallId && p.workflowId === undefined);
  if (own) return { workflowId, pending: own };
  const inTree = st.pendingApprovals.filter((p) => p.toolCallId === toolCallId && p.workflowId !== undefined);
  if (inTree.length > 1)
    return {
      ambiguous: `Tool call ${toolCallId} awaits approval in ${inTree.length} sub-agents: ${inTree.map((p) => `${p.workflowId} (${pathText(p.path ?? [])})`).join(', ')}; decide it on its own run: keel approve ${inTree[0].workflowId} ${toolCallId}`,
    };
  if (inTree.length === 1) return { workflowId: inTree[0].workflowId!, pending: inTree[0] };
  const decided = st.approvals.filter((r) => r.toolCallId === toolCallId);
  if (decided.length === 0 || decided.some((r) => r.workflowId === undefined)) return { workflowId };
  return { workflowId: decided[decided.length - 1].workflowId! };
}

/** A sub-agent's last report as its root keeps it. */
export interface TreeApprovalsRun {
  workflowId: string;
  runKey: string;
  path: string[];
  seq: number;
  pending: PendingApproval[];
}

/** What a root keeps of its sub-agents' approvals (carried across continue-as-new). */
export interface TreeApprovalsState {
  /** The newest report per sub-agent, the most recently changed last. */
  runs: TreeApprovalsRun[];
  /** The records of its sub-agents' decided calls, each with `workflowId` and `path`; the latest 200 (workflows/tree/approvals.ts). */
  decided: ApprovalRecord[];
  /** `<workflowId>#<runKey>` of each run `checkTreeMember` found a member of this tree (0.6.3), the latest kept. */
  members?: string[];
  /** `<workflowId>#<runKey>` of runs found not to be members, whose reports are ignored without a new check. */
  outsiders?: string[];
}

/** What a sub-agent last reported to its root (carried across its continue-as-new). */
export interface TreeReported {
  seq: number;
  /** `<toolCallId>#<assistantIndex>` of each call reported as pending. */
  calls: string[];
}
