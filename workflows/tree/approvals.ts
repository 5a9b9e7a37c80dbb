/**
 * One approval desk for a sub-agent tree (README "Sub-agents"; common/tree/approvals.ts).
 *
 * In a sub-agent (memo `keelTree`), or a batch's task (memo `keelBatch`: the batch is its root, its path `task <i>`):
 * whenever its list of calls awaiting approval changes (a call starts waiting, is decided, times out or is aborted),
 * `reportToRoot` signals `keelTreeApprovals` to the root with the whole list and the records of the calls decided
 * since — a new command, behind `since(PATCH.treeApprovals)`; a run without either memo, or whose list never
 * changes, sends nothing. What it last sent is carried across its continue-as-new.
 *
 * In every run (a root is any run a sub-agent names): the signal's handler keeps the newest list per sub-agent and
 * their decisions (carried across continue-as-new), which `state().pendingApprovals` / `state().approvals` and the
 * current details list with the sub-agent's `workflowId` and `path`. Keeping them is no command. From 0.6.3 (behind
 * `since(PATCH.treeMembers)`) a desk lists a report only from a member of its tree: the first report of each run
 * runs the `checkTreeMember` local activity (the run's first execution must exist and its memo name this desk as its
 * root or batch); a report from anyone else — a fake pending call signalled by an outsider — is ignored and logged. The decision itself
 * is made by the sub-agent only: the client routes a decision sent through the root there (`approvalRoute`), and the
 * root's validator refuses one sent to it directly with where to send it. A batch keeps its tasks' (and their
 * sub-agents') lists the same way and shows them in its `progress` query (`pendingApprovals`).
 */
import { CancellationScope, getExternalWorkflowHandle, log, setHandler, workflowInfo } from '@temporalio/workflow';
import {
  approvalInSubAgent,
  pathText,
  type TreeApprovalsReport,
  type TreeApprovalsRun,
  type TreeApprovalsState,
  type TreeReported,
} from '../../common/tree/approvals.js';
import {
  approvalAlreadyDecided,
  publicPending,
  type ApprovalRecord,
  type PendingApproval,
} from '../../common/updates.js';
import { localSetupActivities } from '../activities.js';
import { treeApprovalsSignal } from '../definitions.js';
import { PATCH } from '../patches.js';
import type { StoredApprovalRecord, StoredPendingApproval } from '../agent/state.js';
import { batchMembership } from '../batch-protocol.js';
import { treeMembership } from './membership.js';
import { since } from '../since.js';

/** Decisions of sub-agents' calls the root keeps (the latest). */
const MAX_DECIDED = 200;
/** Sub-agents with nothing pending the root still remembers (their last `seq`, so a late report is ignored). */
const MAX_IDLE_RUNS = 200;
/** Runs the desk checked (members and not), the latest kept: a later report of one needs no new check. */
const MAX_CHECKED = 1000;

// --- the sub-agent ----------------------------------------------------------------------------------------------------

/** After every status change (`AgentSession.publish`): a sub-agent whose pending calls changed tells its root. */
export function reportToRoot(
  pending: readonly StoredPendingApproval[],
  records: readonly StoredApprovalRecord[],
  reported: TreeReported | undefined,
): TreeReported | undefined {
  const tree = deskOf();
  if (!tree) return reported;
  const calls = pending.map((p) => `${p.toolCallId}#${p.assistantIndex}`);
  const before = reported?.calls ?? [];
  if (calls.length === before.length && calls.every((c, i) => c === before[i])) return reported;
  if (!since(PATCH.treeApprovals)) return reported;
  const decided = before
    .filter((c) => !calls.includes(c))
    .flatMap((c) => {
      const r = [...records].reverse().find((x) => `${x.toolCallId}#${x.assistantIndex}` === c);
      if (!r) return [];
      const { assistantIndex: _i, ...record } = r;
      return [record];
    });
  const seq = (reported?.seq ?? 0) + 1;
  const info = workflowInfo();
  const report: TreeApprovalsReport = {
    workflowId: info.workflowId,
    runKey: info.firstExecutionRunId,
    path: tree.path,
    seq,
    pending: pending.map(publicPending),
    decided,
  };
  // sent even while this run is being cancelled (its aborted calls leave the root's list); a closed root is not told
  void CancellationScope.nonCancellable(() =>
    getExternalWorkflowHandle(tree.rootWorkflowId).signal(treeApprovalsSignal, report),
  ).catch(() => undefined);
  return { seq, calls };
}

/** Where this run reports: its tree's root (memo `keelTree`), else the batch it is a task of (memo `keelBatch`). */
function deskOf(): { rootWorkflowId: string; path: string[] } | undefined {
  const tree = treeMembership();
  if (tree) return tree;
  const batch = batchMembership();
  return batch ? { rootWorkflowId: batch.workflowId, path: [`task ${batch.index}`] } : undefined;
}

// --- the root ---------------------------------------------------------------------------------------------------------

/** Where a root keeps its sub-agents' approvals: an agent run's `SessionState`, a batch's carried state. */
export interface TreeDeskState {
  treeApprovals?: TreeApprovalsState;
}

/**
 * Registers the `keelTreeApprovals` handler of a root (an agent run, or a batch for its tasks and their sub-agents):
 * each report updates `desk`, then `changed` runs (the details). `listedIn` names where they are listed.
 */
export function registerApprovalDesk(desk: TreeDeskState, changed: () => void, listedIn: string): void {
  const checking = new Map<string, Promise<boolean>>();
  setHandler(
    treeApprovalsSignal,
    (report: unknown) => {
      if (!isReport(report)) return; // a malformed signal (not from Keel) changes nothing
      if (!since(PATCH.treeMembers)) return void (receive(desk, report) && changed());
      const key = `${report.workflowId}#${report.runKey}`;
      const t = (desk.treeApprovals ??= { runs: [], decided: [] });
      if (t.members?.includes(key)) return void (receive(desk, report) && changed());
      if (t.outsiders?.includes(key)) return ignored(report, 'already found not to be a member');
      let check = checking.get(key);
      if (!check) {
        check = memberCheck(desk, report, key);
        checking.set(key, check);
        void check.finally(() => checking.delete(key));
      }
      void check.then((member) => {
        if (!member) return ignored(report, 'its memo does not name this run as its root, or it does not exist');
        if (receive(desk, report)) changed();
      });
    },
    {
      description: `From a sub-agent of this run’s tree (or a batch task): its calls awaiting approval, listed in ${listedIn} with its workflowId and path.`,
    },
  );
}

/**
 * Whether the run `report` names belongs to this desk's tree (the `checkTreeMember` local activity), remembered in the
 * desk either way. A check that fails (the server unreachable after its retries) counts as not a member this time.
 */
async function memberCheck(desk: TreeDeskState, report: TreeApprovalsReport, key: string): Promise<boolean> {
  const member = await CancellationScope.nonCancellable(() =>
    localSetupActivities.checkTreeMember.executeWithOptions({ summary: `check tree member ${report.workflowId}` }, [
      { desk: workflowInfo().workflowId, workflowId: report.workflowId, runKey: report.runKey },
    ]),
  ).catch(() => undefined);
  if (member === undefined) return false;
  const t = (desk.treeApprovals ??= { runs: [], decided: [] });
  const list = member ? (t.members ??= []) : (t.outsiders ??= []);
  if (!list.includes(key)) list.push(key);
  if (list.length > MAX_CHECKED) list.splice(0, list.length - MAX_CHECKED);
  return member;
}

/** A report the desk does not list: logged (replay-aware), nothing else. */
function ignored(report: TreeApprovalsReport, why: string): void {
  log.warn(
    `keelTreeApprovals from ${report.workflowId} (run ${report.runKey}) ignored: not a member of this run's tree (${why})`,
    { pending: report.pending.map((p) => p.toolCallId) },
  );
}

function receive(desk: TreeDeskState, report: TreeApprovalsReport): boolean {
  const t = (desk.treeApprovals ??= { runs: [], decided: [] });
  const { workflowId, runKey, path } = report;
  for (const d of report.decided) {
    const known = t.decided.some(
      (x) => x.workflowId === workflowId && x.toolCallId === d.toolCallId && x.decidedAt === d.decidedAt,
    );
    if (!known) t.decided.push({ ...d, workflowId, path });
  }
  if (t.decided.length > MAX_DECIDED) t.decided.splice(0, t.decided.length - MAX_DECIDED);
  // by run chain: a later sub-agent under the same workflow id (a repeated tool call id) counts its seq again
  const at = t.runs.findIndex((r) => r.workflowId === workflowId && r.runKey === runKey);
  if (at < 0 || t.runs[at].seq < report.seq) {
    if (at >= 0) t.runs.splice(at, 1);
    t.runs.push({ workflowId, runKey, path, seq: report.seq, pending: report.pending });
  }
  let drop = t.runs.filter((r) => r.pending.length === 0).length - MAX_IDLE_RUNS;
  if (drop > 0) t.runs = t.runs.filter((r) => r.pending.length > 0 || drop-- <= 0);
  return true;
}

function isReport(r: unknown): r is TreeApprovalsReport {
  const v = r as Partial<TreeApprovalsReport> | undefined;
  return (
    !!v &&
    typeof v.workflowId === 'string' &&
    typeof v.runKey === 'string' &&
    Array.isArray(v.path) &&
    v.path.every((p) => typeof p === 'string') &&
    typeof v.seq === 'number' &&
    Array.isArray(v.pending) &&
    v.pending.every((p) => !!p && typeof p.toolCallId === 'string' && typeof p.argsDigest === 'string') &&
    Array.isArray(v.decided) &&
    v.decided.every((d) => !!d && typeof d.toolCallId === 'string')
  );
}

/** The sub-agents' pending calls, for `state().pendingApprovals` (after the run's own). */
export function treePending(st: TreeDeskState): PendingApproval[] {
  return (st.treeApprovals?.runs ?? []).flatMap((r) =>
    r.pending.map((p) => ({ ...p, workflowId: r.workflowId, path: r.path })),
  );
}

/** The sub-agents' decisions, for `state().approvals` (after the run's own). */
export function treeDecided(st: TreeDeskState): ApprovalRecord[] {
  return st.treeApprovals?.decided ?? [];
}

/** Lines of the current details: each sub-agent's call awaiting approval, with its path. */
export function treeDetails(st: TreeDeskState): string[] {
  return treePending(st).map(
    (p) =>
      `⚠ awaiting approval in ${pathText(p.path!)}: ${p.toolName} ${JSON.stringify(p.args).slice(0, 200)} (${p.toolCallId} in ${p.workflowId}, digest ${p.argsDigest.slice(0, 12)}…)`,
  );
}

/**
 * The root's refusal of an `approve` / `deny` sent to it for a sub-agent's call: where to send it while the call
 * waits, `already approved by …` once the sub-agent decided it; undefined when no sub-agent has such a call.
 */
export function subAgentRefusal(st: TreeDeskState, toolCallId: string): string | undefined {
  const waiting = treePending(st).find((p) => p.toolCallId === toolCallId);
  if (waiting) return approvalInSubAgent(toolCallId, { workflowId: waiting.workflowId!, path: waiting.path! });
  const done = [...treeDecided(st)].reverse().find((r) => r.toolCallId === toolCallId);
  return done ? approvalAlreadyDecided(done) : undefined;
}
