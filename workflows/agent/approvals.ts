/**
 * Human approval of tool calls (README "Approvals"). A call the preparation activity marked as needing approval waits
 * here, listed in `state().pendingApprovals` with `KeelStatus = "awaiting-approval"`, until the `approve` / `deny`
 * Update decides it, `approvalTimeout` passes, or the run is interrupted or cancelled (denied, `Operation aborted`).
 * Pending approvals are workflow state: they survive a lost worker, and continue-as-new carries them (the batch is
 * suspended once nothing else of it is running; tool-batch.ts resumes it).
 *
 * None of this runs for a run recorded by 0.1.0 (no activity result there asks for approval), so the new commands
 * (the timeout timer, the status upserts) need no `patched()`.
 *
 * Metrics (the workflow `metricMeter`: not a command, and not emitted while a history replays, so each change counts
 * once): `keel_approvals_requested` (tool) when a call starts waiting, `keel_approvals_decided` (tool, decision) when
 * it is decided, times out or is aborted. Approvals pending = requested − decided (README "Observability").
 */
import { msToNumber } from '@temporalio/common';
import { condition, metricMeter, patched, setHandler } from '@temporalio/workflow';
import { OPERATION_ABORTED } from '../../common/errors.js';
import type { ToolCall } from '../../common/messages.js';
import {
  approvalAlreadyDecided,
  approvalDigestMismatch,
  approvalInputErrors,
  approvalUnknown,
  SYSTEM_APPROVER,
  toolDenied,
  toolNotApproved,
  type ApprovalDecisionInput,
  type ApprovalRecord,
  type ApprovalVerdict,
  type PendingApproval,
} from '../../common/updates.js';
import type { ToolOutcome } from '../../common/wire.js';
import { workflowNow } from '../clock.js';
import { historyDecision } from './continue-as-new.js';
import { approveUpdate, denyUpdate } from '../definitions.js';
import type { Session, SessionState, StoredApprovalRecord, StoredPendingApproval } from './session.js';
import { refuseIfClosed, reject } from './update-guards.js';
import { PATCH } from '../patches.js';
import { publish } from './visibility.js';

const DEFAULT_APPROVAL_TIMEOUT = '24h';
/** Decisions kept in `state().approvals` (and carried across continue-as-new). */
const MAX_RECORDS = 200;

export type ApprovalWait =
  | { kind: 'approved'; record: ApprovalRecord }
  /** Denied, timed out or aborted: the call's error result. */
  | { kind: 'refused'; outcome: ToolOutcome }
  /** Continue-as-new is due and nothing else of the batch runs: the call stays pending into the new run. */
  | { kind: 'suspend' };

const pendingOf = (st: SessionState): StoredPendingApproval[] => (st.pendingApprovals ??= []);
const recordsOf = (st: SessionState): StoredApprovalRecord[] => (st.approvals ??= []);

function findPending(st: SessionState, toolCallId: string, assistantIndex?: number): StoredPendingApproval | undefined {
  return pendingOf(st).find(
    (p) => p.toolCallId === toolCallId && (assistantIndex === undefined || p.assistantIndex === assistantIndex),
  );
}

function findRecord(st: SessionState, toolCallId: string, assistantIndex?: number): StoredApprovalRecord | undefined {
  const list = recordsOf(st);
  for (let i = list.length - 1; i >= 0; i--) {
    if (
      list[i].toolCallId === toolCallId &&
      (assistantIndex === undefined || list[i].assistantIndex === assistantIndex)
    )
      return list[i];
  }
  return undefined;
}

/** The call of message `assistantIndex` is pending here (after continue-as-new: resume its wait). */
export function isPending(s: Session, toolCallId: string, assistantIndex: number): StoredPendingApproval | undefined {
  return findPending(s.state, toolCallId, assistantIndex);
}

/** `state().pendingApprovals`: `{ toolCallId, toolName, args, argsDigest, requestedAt }` each. */
export function publicPending(s: Session): PendingApproval[] {
  return pendingOf(s.state).map(({ toolCallId, toolName, args, argsDigest, requestedAt }) => ({
    toolCallId,
    toolName,
    args,
    argsDigest,
    requestedAt,
  }));
}

export function publicApprovals(s: Session): ApprovalRecord[] {
  return recordsOf(s.state).map(publicRecord);
}

function publicRecord({ assistantIndex: _i, ...r }: StoredApprovalRecord): ApprovalRecord {
  return r;
}

/** `awaiting-approval` while any call waits; back to `running` when none does. */
function updateStatus(s: Session): void {
  const st = s.state;
  if (pendingOf(st).length > 0 && st.status === 'running') st.status = 'awaiting-approval';
  else if (pendingOf(st).length === 0 && st.status === 'awaiting-approval') st.status = 'running';
  publish(s);
}

function timeoutText(t: string | number): string {
  return typeof t === 'number' ? `${t}ms` : t;
}

/** Moves a pending call to the decided records. */
function decide(
  s: Session,
  p: StoredPendingApproval,
  decision: ApprovalVerdict,
  approver: string,
  reason?: string,
): StoredApprovalRecord {
  const st = s.state;
  const record: StoredApprovalRecord = {
    toolCallId: p.toolCallId,
    toolName: p.toolName,
    decision,
    approver,
    ...(reason !== undefined ? { reason } : {}),
    argsDigest: p.argsDigest,
    requestedAt: p.requestedAt,
    decidedAt: workflowNow(),
    assistantIndex: p.assistantIndex,
  };
  st.pendingApprovals = pendingOf(st).filter((x) => x !== p);
  metricMeter
    .createCounter('keel_approvals_decided', undefined, 'Tool calls awaiting approval that were decided')
    .add(1, { tool: p.toolName, decision });
  const records = recordsOf(st);
  records.push(record);
  if (records.length > MAX_RECORDS) records.splice(0, records.length - MAX_RECORDS);
  updateStatus(s);
  return record;
}

/** Due only when nothing else of the batch is running, so no activity is left behind by continue-as-new. */
function suspendDue(s: Session): boolean {
  return s.runningTools.size === 0 && historyDecision(s).kind === 'continueAsNew';
}

/**
 * Waits for the decision on `call` (of the assistant message at `assistantIndex`), registering it as pending unless
 * it already is (a batch resumed after continue-as-new).
 */
export async function awaitApproval(
  s: Session,
  call: ToolCall,
  assistantIndex: number,
  args: unknown,
  argsDigest: string,
): Promise<ApprovalWait> {
  const st = s.state;
  let pending = findPending(st, call.id, assistantIndex);
  if (!pending) {
    const timeout = st.config.approvalTimeout ?? DEFAULT_APPROVAL_TIMEOUT;
    const requestedAt = workflowNow();
    pending = {
      toolCallId: call.id,
      toolName: call.name,
      args,
      argsDigest,
      requestedAt,
      assistantIndex,
      expiresAt: requestedAt + msToNumber(timeout),
      timeout: timeoutText(timeout),
    };
    pendingOf(st).push(pending);
    metricMeter
      .createCounter('keel_approvals_requested', undefined, 'Tool calls that started waiting for approval')
      .add(1, { tool: call.name });
  }
  updateStatus(s);
  const decided = () =>
    findRecord(st, call.id, assistantIndex) !== undefined && !findPending(st, call.id, assistantIndex);
  const remaining = pending.expiresAt - workflowNow();
  const inTime =
    remaining > 0 &&
    (decided() ||
      s.abort !== undefined ||
      (await condition(() => decided() || s.abort !== undefined || suspendDue(s), remaining)));
  const record = decided() ? findRecord(st, call.id, assistantIndex) : undefined;
  if (record)
    return record.decision === 'approved'
      ? { kind: 'approved', record: publicRecord(record) }
      : refused(toolDenied(call.name, record.approver, record.reason), record);
  if (s.abort) return refused(OPERATION_ABORTED, decide(s, pending, 'denied', SYSTEM_APPROVER, OPERATION_ABORTED));
  if (!inTime)
    return refused(toolNotApproved(call.name, pending.timeout), decide(s, pending, 'timed-out', SYSTEM_APPROVER));
  return { kind: 'suspend' };
}

function refused(text: string, record: StoredApprovalRecord): ApprovalWait {
  return {
    kind: 'refused',
    outcome: {
      content: [{ type: 'text', text }],
      details: { approval: publicRecord(record) },
      isError: true,
      timestamp: workflowNow(),
    },
  };
}

/** The `approve` / `deny` Updates: validated against the pending calls; answer the decision record. */
export function registerApprovalUpdates(s: Session): void {
  for (const [def, decision] of [
    [approveUpdate, 'approved'],
    [denyUpdate, 'denied'],
  ] as const) {
    const name = decision === 'approved' ? 'approve' : 'deny';
    const decideNow = (input: ApprovalDecisionInput): ApprovalRecord => {
      const pending = findPending(s.state, input.toolCallId);
      if (!pending) {
        // decided meanwhile by the run itself (its timeout fired in the same workflow task)
        const done = findRecord(s.state, input.toolCallId);
        reject(done ? approvalAlreadyDecided(done) : approvalUnknown(input.toolCallId));
      }
      return publicRecord(decide(s, pending, decision, input.approver.trim(), input.reason));
    };
    setHandler(
      def,
      (input: ApprovalDecisionInput): ApprovalRecord | Promise<ApprovalRecord> => {
        if (!patched(PATCH.decideAfterTaskJobs)) return decideNow(input);
        // A cancel or interrupt that came in the same workflow task after this Update (the validator could not see
        // it) would abort the call once approved: the answer would be `approved` for a call that never runs. The
        // decision waits until every job of the task is applied (the handler's promise runs after them), then looks.
        return Promise.resolve().then(() => {
          refuseIfClosed(s, name);
          return decideNow(input);
        });
      },
      {
        validator: (input: unknown) => {
          refuseIfClosed(s, name);
          const errors = approvalInputErrors(input);
          if (errors.length > 0) reject(`${name}: ${errors.join('; ')}`);
          const { toolCallId, argsDigest } = input as ApprovalDecisionInput;
          const pending = findPending(s.state, toolCallId);
          if (!pending) {
            const done = findRecord(s.state, toolCallId);
            reject(done ? approvalAlreadyDecided(done) : approvalUnknown(toolCallId));
          }
          if (pending.argsDigest !== argsDigest) reject(approvalDigestMismatch(toolCallId, argsDigest));
        },
        description: `Decide a tool call awaiting approval: { toolCallId, argsDigest, approver, reason? } → the decision record.`,
      },
    );
  }
}
