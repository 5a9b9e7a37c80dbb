/**
 * Human approval of tool calls (README "Approvals"). A call the preparation activity marked as needing approval waits
 * here, listed in `state().pendingApprovals` with `KeelStatus = "awaiting-approval"`, until the `approve` / `deny`
 * Update decides it, `approvalTimeout` passes, or the run is interrupted or cancelled (denied, `Operation aborted`).
 * Pending approvals are workflow state: they survive a lost worker, and continue-as-new carries them (the batch is
 * suspended once nothing else of it is running; tool-batch.ts resumes it).
 *
 * Signed decisions (README "Who may approve", from 0.5.0): a run whose worker verifies approvals (`verifiedApprovals`
 * in the state, from `startRun`) refuses an unsigned decision in the validator, and the Update applies a signed one
 * only after the `verifyApproval` local activity accepted it (`AgentSession.decideVerified`); the record then names the
 * verified `subject`, `issuer` and `keyId`.
 *
 * None of this runs for a run recorded by 0.1.0 (no activity result there asks for approval), so the new commands
 * (the timeout timer, the status upserts) need no `patched()`.
 *
 * Metrics (the workflow `metricMeter`: not a command, and not emitted while a history replays, so each change counts
 * once): `keel_approvals_requested` (tool) when a call starts waiting, `keel_approvals_decided` (tool, decision) when
 * it is decided, times out or is aborted. Approvals pending = requested − decided (README "Observability").
 */
import { msToNumber } from '@temporalio/common';
import { condition, metricMeter, uuid4 } from '@temporalio/workflow';
import { OPERATION_ABORTED } from '../../common/errors.js';
import type { ToolCall } from '../../common/messages.js';
import {
  approvalAlreadyDecided,
  approvalDigestMismatch,
  approvalInputErrors,
  approvalTokenRequired,
  approvalUnknown,
  APPROVER_REQUIRED,
  SYSTEM_APPROVER,
  toolDenied,
  toolNotApproved,
  type ApprovalDecisionInput,
  type ApprovalRecord,
  type ApprovalVerdict,
  type PendingApproval,
} from '../../common/updates.js';
import type { ToolOutcome } from '../../common/wire.js';
import { toolSummary } from '../activities.js';
import { workflowNow } from '../clock.js';
import { subAgentRefusal } from './tree-approvals.js';
import type { AbortKind, SessionState, StoredApprovalRecord, StoredPendingApproval } from './state.js';
import { reject } from './update-guards.js';

const DEFAULT_APPROVAL_TIMEOUT = '24h';
/** Decisions kept in `state().approvals` (and carried across continue-as-new). */
const MAX_RECORDS = 200;

export type ApprovalWait =
  | { kind: 'approved'; record: ApprovalRecord }
  /** Denied, timed out or aborted: the call's error result. */
  | { kind: 'refused'; outcome: ToolOutcome }
  /** Continue-as-new is due and nothing else of the batch runs: the call stays pending into the new run. */
  | { kind: 'suspend' };

/** What a wait for a decision needs of the live session besides the state. */
export interface ApprovalLive {
  readonly abort?: AbortKind;
  /** Publishes the status (`awaiting-approval` / `running`): details and search attributes. */
  publish(): void;
  /** Continue-as-new is due and nothing else of the batch runs. */
  suspendDue(): boolean;
}

const pendingOf = (st: SessionState): StoredPendingApproval[] => (st.pendingApprovals ??= []);
const recordsOf = (st: SessionState): StoredApprovalRecord[] => (st.approvals ??= []);

/** The pending call `toolCallId` (of message `assistantIndex`, when given; after continue-as-new: resume its wait). */
export function findPending(
  st: SessionState,
  toolCallId: string,
  assistantIndex?: number,
): StoredPendingApproval | undefined {
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

/** `state().pendingApprovals`: `{ toolCallId, toolName, args, argsDigest, requestedAt, requestId }` each. */
export function publicPending(st: SessionState): PendingApproval[] {
  return pendingOf(st).map(({ toolCallId, toolName, args, argsDigest, requestedAt, requestId }) => ({
    toolCallId,
    toolName,
    args,
    argsDigest,
    requestedAt,
    ...(requestId !== undefined ? { requestId } : {}),
  }));
}

export function publicApprovals(st: SessionState): ApprovalRecord[] {
  return recordsOf(st).map(publicRecord);
}

export function publicRecord({ assistantIndex: _i, ...r }: StoredApprovalRecord): ApprovalRecord {
  return r;
}

/** `awaiting-approval` while any call waits; back to `running` when none does. The caller publishes. */
function approvalStatus(st: SessionState): void {
  if (pendingOf(st).length > 0 && st.status === 'running') st.status = 'awaiting-approval';
  else if (pendingOf(st).length === 0 && st.status === 'awaiting-approval') st.status = 'running';
}

function timeoutText(t: string | number): string {
  return typeof t === 'number' ? `${t}ms` : t;
}

/** Who a verified decision came from (README "Who may approve"): recorded with it, never the token. */
export interface VerifiedIdentity {
  subject: string;
  issuer?: string;
  keyId?: string;
}

/** Moves a pending call to the decided records (the status follows; the caller publishes). */
function decide(
  st: SessionState,
  p: StoredPendingApproval,
  decision: ApprovalVerdict,
  approver: string,
  reason?: string,
  verified?: VerifiedIdentity,
): StoredApprovalRecord {
  const record: StoredApprovalRecord = {
    toolCallId: p.toolCallId,
    toolName: p.toolName,
    decision,
    approver,
    ...(reason !== undefined ? { reason } : {}),
    argsDigest: p.argsDigest,
    requestedAt: p.requestedAt,
    decidedAt: workflowNow(),
    ...(verified
      ? {
          subject: verified.subject,
          ...(verified.issuer !== undefined ? { issuer: verified.issuer } : {}),
          ...(verified.keyId !== undefined ? { keyId: verified.keyId } : {}),
        }
      : {}),
    assistantIndex: p.assistantIndex,
  };
  st.pendingApprovals = pendingOf(st).filter((x) => x !== p);
  metricMeter
    .createCounter('keel_approvals_decided', undefined, 'Tool calls awaiting approval that were decided')
    .add(1, { tool: p.toolName, decision });
  const records = recordsOf(st);
  records.push(record);
  if (records.length > MAX_RECORDS) records.splice(0, records.length - MAX_RECORDS);
  approvalStatus(st);
  return record;
}

/**
 * Waits for the decision on `call` (of the assistant message at `assistantIndex`), registering it as pending unless
 * it already is (a batch resumed after continue-as-new). `AgentSession.awaitApproval` calls this.
 */
export async function awaitDecision(
  st: SessionState,
  live: ApprovalLive,
  call: ToolCall,
  assistantIndex: number,
  args: unknown,
  argsDigest: string,
): Promise<ApprovalWait> {
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
      // the nonce a signed decision's token binds (keel_request): deterministic (the workflow's seeded random), no
      // command, carried across continue-as-new with the pending call
      requestId: uuid4(),
      assistantIndex,
      expiresAt: requestedAt + msToNumber(timeout),
      timeout: timeoutText(timeout),
    };
    pendingOf(st).push(pending);
    metricMeter
      .createCounter('keel_approvals_requested', undefined, 'Tool calls that started waiting for approval')
      .add(1, { tool: call.name });
  }
  // a call that started waiting under 0.6.2 (carried across continue-as-new) gets its nonce when it resumes here
  pending.requestId ??= uuid4();
  approvalStatus(st);
  live.publish();
  const decided = () =>
    findRecord(st, call.id, assistantIndex) !== undefined && !findPending(st, call.id, assistantIndex);
  const remaining = pending.expiresAt - workflowNow();
  const inTime =
    remaining > 0 &&
    (decided() ||
      live.abort !== undefined ||
      (await condition(() => decided() || live.abort !== undefined || live.suspendDue(), remaining, {
        summary: approvalTimerSummary(pending),
      })));
  const record = decided() ? findRecord(st, call.id, assistantIndex) : undefined;
  if (record)
    return record.decision === 'approved'
      ? { kind: 'approved', record: publicRecord(record) }
      : refused(toolDenied(call.name, record.approver, record.reason), record);
  if (live.abort) return refused(OPERATION_ABORTED, decideAndPublish(st, live, pending, 'denied', OPERATION_ABORTED));
  if (!inTime)
    return refused(toolNotApproved(call.name, pending.timeout), decideAndPublish(st, live, pending, 'timed-out'));
  return { kind: 'suspend' };
}

/**
 * The Web UI's label of the timer a call waits on: `approval timeout (24h) · deploy web`. User metadata, not part of
 * the command the replay compares: no patch (docs/versioning.md).
 */
function approvalTimerSummary(p: StoredPendingApproval): string {
  return `approval timeout (${p.timeout}) · ${toolSummary(p.toolName, p.args)}`;
}

/** The run itself decides (an abort, a timeout): the system approver. */
function decideAndPublish(
  st: SessionState,
  live: ApprovalLive,
  p: StoredPendingApproval,
  decision: ApprovalVerdict,
  reason?: string,
): StoredApprovalRecord {
  const record = decide(st, p, decision, SYSTEM_APPROVER, reason);
  live.publish();
  return record;
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

/** The `approve` / `deny` Update validator (after `refuseIfClosed`): a well-formed input for a pending call. */
export function validateDecision(st: SessionState, name: 'approve' | 'deny', input: unknown): void {
  const errors = approvalInputErrors(input);
  if (errors.length > 0) reject(`${name}: ${errors.join('; ')}`);
  const { toolCallId, argsDigest } = input as ApprovalDecisionInput;
  const pending = findPending(st, toolCallId);
  if (!pending) {
    const done = findRecord(st, toolCallId);
    // a sub-agent's call (one approval desk, tree-approvals.ts): the sub-agent decides it; the client routes it there
    reject(done ? approvalAlreadyDecided(done) : (subAgentRefusal(st, toolCallId) ?? approvalUnknown(toolCallId)));
  }
  if (pending.argsDigest !== argsDigest) reject(approvalDigestMismatch(toolCallId, argsDigest));
  // a run started on a worker that verifies approvals takes signed decisions only (README "Who may approve")
  const { token, approver } = input as ApprovalDecisionInput;
  if (st.verifiedApprovals && token === undefined) reject(approvalTokenRequired(name));
  // a run that does not verify (started before 0.5.0, or on an unauthenticated worker) ignores a token: it needs a name
  if (!st.verifiedApprovals && !approver?.trim()) reject(`${name}: ${APPROVER_REQUIRED}`);
}

/** `approve` / `deny`: decides the pending call (the caller publishes), or refuses one decided meanwhile. */
export function decidePending(
  st: SessionState,
  decision: ApprovalVerdict,
  input: ApprovalDecisionInput,
  verified?: VerifiedIdentity,
): StoredApprovalRecord {
  const pending = pendingOrRefuse(st, input.toolCallId);
  const approver = verified ? verified.subject : (input.approver ?? '').trim();
  return decide(st, pending, decision, approver, input.reason, verified);
}

/**
 * The pending call `toolCallId`, or the refusal of a decision for a call decided meanwhile (by the run itself — its
 * timeout fired in the same workflow task — or by another decision verified first) or unknown.
 */
export function pendingOrRefuse(st: SessionState, toolCallId: string): StoredPendingApproval {
  const pending = findPending(st, toolCallId);
  if (pending) return pending;
  const done = findRecord(st, toolCallId);
  reject(done ? approvalAlreadyDecided(done) : approvalUnknown(toolCallId));
}
