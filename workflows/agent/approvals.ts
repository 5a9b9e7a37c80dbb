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
  publicPending,
  toolNotApproved,
  type ApprovalDecisionInput,
  type ApprovalRecord,
  type ApprovalVerdict,
  type PendingApproval,
} from '../../common/updates.js';
import type { ToolOutcome } from '../../common/wire.js';
import { toolSummary } from '../activities.js';
import { workflowNow } from '../clock.js';
import type { RunTree } from '../tree/context.js';
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

export function publicRecord({ assistantIndex: _i, ...r }: StoredApprovalRecord): ApprovalRecord {
  return r;
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

/**
 * The Web UI's label of the timer a call waits on: `approval timeout (24h) · deploy web`. User metadata, not part of
 * the command the replay compares: no patch (docs/versioning.md).
 */
function approvalTimerSummary(p: StoredPendingApproval): string {
  return `approval timeout (${p.timeout}) · ${toolSummary(p.toolName, p.args)}`;
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

/**
 * The session's approval desk: it owns the calls awaiting approval and the decided records of the carried state (and
 * the status `awaiting-approval` they imply). The session holds one; the `state` query, the details and the `approve` /
 * `deny` handlers read and decide through it.
 */
export class ApprovalDesk {
  constructor(
    private readonly st: SessionState,
    private readonly tree: RunTree,
  ) {}

  /** The calls awaiting approval (created on first use: absent in state carried by 0.1.0). */
  private pending(): StoredPendingApproval[] {
    return (this.st.pendingApprovals ??= []);
  }

  private records(): StoredApprovalRecord[] {
    return (this.st.approvals ??= []);
  }

  /** The pending call `toolCallId` (of message `assistantIndex`, when given; after continue-as-new: resume its wait). */
  findPending(toolCallId: string, assistantIndex?: number): StoredPendingApproval | undefined {
    return this.pending().find(
      (p) => p.toolCallId === toolCallId && (assistantIndex === undefined || p.assistantIndex === assistantIndex),
    );
  }

  private findRecord(toolCallId: string, assistantIndex?: number): StoredApprovalRecord | undefined {
    const list = this.records();
    for (let i = list.length - 1; i >= 0; i--) {
      if (
        list[i].toolCallId === toolCallId &&
        (assistantIndex === undefined || list[i].assistantIndex === assistantIndex)
      )
        return list[i];
    }
    return undefined;
  }

  /** After every status change: a sub-agent (or a batch's task) whose pending calls changed tells its tree's root. */
  reportToRoot(): void {
    this.tree.reportPending(this.pending(), this.records());
  }

  /** `state().pendingApprovals`: `{ toolCallId, toolName, args, argsDigest, requestedAt, requestId }` each. */
  publicPending(): PendingApproval[] {
    return this.pending().map(publicPending);
  }

  publicApprovals(): ApprovalRecord[] {
    return this.records().map(publicRecord);
  }

  /** `awaiting-approval` while any call waits; back to `running` when none does. The caller publishes. */
  private updateStatus(): void {
    if (this.pending().length > 0 && this.st.status === 'running') this.st.status = 'awaiting-approval';
    else if (this.pending().length === 0 && this.st.status === 'awaiting-approval') this.st.status = 'running';
  }

  /** Moves a pending call to the decided records (the status follows; the caller publishes). */
  private decide(
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
    this.st.pendingApprovals = this.pending().filter((x) => x !== p);
    metricMeter
      .createCounter('keel_approvals_decided', undefined, 'Tool calls awaiting approval that were decided')
      .add(1, { tool: p.toolName, decision });
    const records = this.records();
    records.push(record);
    if (records.length > MAX_RECORDS) records.splice(0, records.length - MAX_RECORDS);
    this.updateStatus();
    return record;
  }

  /**
   * Waits for the decision on `call` (of the assistant message at `assistantIndex`), registering it as pending unless
   * it already is (a batch resumed after continue-as-new). `AgentSession.awaitApproval` calls this.
   */
  async awaitDecision(
    live: ApprovalLive,
    call: ToolCall,
    assistantIndex: number,
    args: unknown,
    argsDigest: string,
  ): Promise<ApprovalWait> {
    let pending = this.findPending(call.id, assistantIndex);
    if (!pending) {
      const timeout = this.st.config.approvalTimeout ?? DEFAULT_APPROVAL_TIMEOUT;
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
      this.pending().push(pending);
      metricMeter
        .createCounter('keel_approvals_requested', undefined, 'Tool calls that started waiting for approval')
        .add(1, { tool: call.name });
    }
    // a call that started waiting under 0.6.2 (carried across continue-as-new) gets its nonce when it resumes here
    pending.requestId ??= uuid4();
    this.updateStatus();
    live.publish();
    const decided = () =>
      this.findRecord(call.id, assistantIndex) !== undefined && !this.findPending(call.id, assistantIndex);
    const remaining = pending.expiresAt - workflowNow();
    const inTime =
      remaining > 0 &&
      (decided() ||
        live.abort !== undefined ||
        (await condition(() => decided() || live.abort !== undefined || live.suspendDue(), remaining, {
          summary: approvalTimerSummary(pending),
        })));
    const record = decided() ? this.findRecord(call.id, assistantIndex) : undefined;
    if (record)
      return record.decision === 'approved'
        ? { kind: 'approved', record: publicRecord(record) }
        : refused(toolDenied(call.name, record.approver, record.reason), record);
    if (live.abort)
      return refused(OPERATION_ABORTED, this.decideAndPublish(live, pending, 'denied', OPERATION_ABORTED));
    if (!inTime)
      return refused(toolNotApproved(call.name, pending.timeout), this.decideAndPublish(live, pending, 'timed-out'));
    return { kind: 'suspend' };
  }

  /** The run itself decides (an abort, a timeout): the system approver. */
  private decideAndPublish(
    live: ApprovalLive,
    p: StoredPendingApproval,
    decision: ApprovalVerdict,
    reason?: string,
  ): StoredApprovalRecord {
    const record = this.decide(p, decision, SYSTEM_APPROVER, reason);
    live.publish();
    return record;
  }

  /** The `approve` / `deny` Update validator (after `refuseIfClosed`): a well-formed input for a pending call. */
  validateDecision(name: 'approve' | 'deny', input: unknown): void {
    const errors = approvalInputErrors(input);
    if (errors.length > 0) reject(`${name}: ${errors.join('; ')}`);
    const { toolCallId, argsDigest } = input as ApprovalDecisionInput;
    const pending = this.findPending(toolCallId);
    if (!pending) {
      const done = this.findRecord(toolCallId);
      // a sub-agent's call (one approval desk, tree-approvals.ts): the sub-agent decides it; the client routes it there
      reject(done ? approvalAlreadyDecided(done) : (this.tree.refusalFor(toolCallId) ?? approvalUnknown(toolCallId)));
    }
    if (pending.argsDigest !== argsDigest) reject(approvalDigestMismatch(toolCallId, argsDigest));
    // a run started on a worker that verifies approvals takes signed decisions only (README "Who may approve")
    const { token, approver } = input as ApprovalDecisionInput;
    if (this.st.verifiedApprovals && token === undefined) reject(approvalTokenRequired(name));
    // a run that does not verify (started before 0.5.0, or on an unauthenticated worker) ignores a token: it needs a name
    if (!this.st.verifiedApprovals && !approver?.trim()) reject(`${name}: ${APPROVER_REQUIRED}`);
  }

  /** `approve` / `deny`: decides the pending call (the caller publishes), or refuses one decided meanwhile. */
  decidePending(
    decision: ApprovalVerdict,
    input: ApprovalDecisionInput,
    verified?: VerifiedIdentity,
  ): StoredApprovalRecord {
    const pending = this.pendingOrRefuse(input.toolCallId);
    const approver = verified ? verified.subject : (input.approver ?? '').trim();
    return this.decide(pending, decision, approver, input.reason, verified);
  }

  /**
   * The pending call `toolCallId`, or the refusal of a decision for a call decided meanwhile (by the run itself — its
   * timeout fired in the same workflow task — or by another decision verified first) or unknown.
   */
  pendingOrRefuse(toolCallId: string): StoredPendingApproval {
    const pending = this.findPending(toolCallId);
    if (pending) return pending;
    const done = this.findRecord(toolCallId);
    reject(done ? approvalAlreadyDecided(done) : approvalUnknown(toolCallId));
  }
}
