/**
 * The Updates of `agentWorkflow` (README "Updates"): their acknowledgements, the approval shapes, and the exact texts
 * their validators refuse with. Plain JSON; shared by the workflow, the client and the CLI.
 */
import type { RunStatus, SessionStatus } from './run.js';
import { incomingMessagesErrors } from './validate-messages.js';

/** `followUp` / `steer`: the queue lengths right after the message(s) were queued. */
export interface QueuedAck {
  queued: { steering: number; followUp: number };
}

/**
 * `interrupt`: whether an agent run was running (and is now being aborted), and then what the run does next, as the
 * queues stand when the interrupt arrives: `answers-queued` (a session with queued steering or follow-up messages
 * starts its next agent run on them at once), `waits` (a session waits for input), `stops` (a task, or a session whose
 * `end` was requested, closes as `stopped` / `completed`; a task returns queued messages unprocessed).
 */
export interface InterruptAck {
  interrupted: boolean;
  next?: 'answers-queued' | 'waits' | 'stops';
}

/**
 * `end` / `cancel`: the run's final status once it has closed. When the run continues-as-new before it closes, the
 * workflow answers `{ status: 'running', continuedAsNew: true }` (the request is carried into the new run);
 * `AgentRunHandle.end()` then waits for the result itself.
 */
export interface ClosedAck {
  status: RunStatus | SessionStatus;
  continuedAsNew?: true;
}

/**
 * Argument of the `approve` / `deny` Updates. `argsDigest` binds the decision to exactly the pending arguments.
 * On a worker that verifies approvals (README "Who may approve") the decision carries `token`, a compact JWS bound to
 * this run, call, digest and verb; the approver is then the token's verified subject, and `approver` may be left out.
 */
export interface ApprovalDecisionInput {
  toolCallId: string;
  argsDigest: string;
  /** Who decides; must not be empty, unless `token` is given (then the token's verified `sub` is the approver). */
  approver?: string;
  reason?: string;
  /** A signed approval token (compact JWS, README "Who may approve"); required when the run verifies approvals. */
  token?: string;
}

/** A tool call waiting for a person (`state().pendingApprovals`). `requestedAt`: ms since the epoch (workflow time). */
export interface PendingApproval {
  toolCallId: string;
  toolName: string;
  /** The prepared (validated) arguments that run once approved. */
  args: unknown;
  /** sha256 (hex) of the canonical JSON of `args`. */
  argsDigest: string;
  requestedAt: number;
  /**
   * This request for a decision (a nonce from the workflow's deterministic random source, from 0.6.3): a signed
   * decision's token binds it as `keel_request`, so a token decides this request only, never a later call with the same
   * id and arguments. Absent for a call that started waiting under 0.6.2 or earlier.
   */
  requestId?: string;
  /**
   * Listed by the tree's root for a call one of its sub-agents waits for (README "Sub-agents", one approval desk): the
   * sub-agent's workflow id, where the decision is made (`AgentRunHandle.approve` on the root sends it there).
   */
  workflowId?: string;
  /** With `workflowId`: the tool-call labels from the root down to that sub-agent (`research › call_1`, …). */
  path?: string[];
}

/** What a pending call shows outside its run (`state().pendingApprovals`, the tree root's report): the fields above. */
export function publicPending(p: PendingApproval): PendingApproval {
  const { toolCallId, toolName, args, argsDigest, requestedAt, requestId } = p;
  return { toolCallId, toolName, args, argsDigest, requestedAt, ...(requestId !== undefined ? { requestId } : {}) };
}

export type ApprovalVerdict = 'approved' | 'denied' | 'timed-out';

/**
 * How a call needing approval was decided (`state().approvals`, and the tool result's `details.approval`).
 * `approver` is `keel` when the run decided itself (timeout, interrupt, cancel).
 */
export interface ApprovalRecord {
  toolCallId: string;
  toolName: string;
  decision: ApprovalVerdict;
  approver: string;
  reason?: string;
  argsDigest: string;
  requestedAt: number;
  decidedAt: number;
  /** Verified approvals only: the token's `sub` (also `approver`), `iss` and the key id (`kid`) it was signed with. */
  subject?: string;
  issuer?: string;
  keyId?: string;
  /** Listed by the tree's root for a sub-agent's call: the sub-agent's workflow id and path (as `PendingApproval`). */
  workflowId?: string;
  path?: string[];
}

/** The approver named when the run itself decides (timeout, interrupt, cancel). */
export const SYSTEM_APPROVER = 'keel';

export type UpdateName = 'followUp' | 'steer' | 'interrupt' | 'end' | 'cancel' | 'approve' | 'deny';

const ACTION: Record<UpdateName, string> = {
  followUp: 'queue a follow-up',
  steer: 'queue a steering message',
  interrupt: 'interrupt',
  end: 'end',
  cancel: 'cancel',
  approve: 'approve',
  deny: 'deny',
};

/** `Cannot queue a follow-up: the run is completed` (or `… is being cancelled`, `… is ending`). */
export const runClosed = (update: UpdateName, why: string): string => `Cannot ${ACTION[update]}: the run ${why}`;

export const approvalUnknown = (toolCallId: string): string => `No tool call ${toolCallId} is awaiting approval`;
export const approvalAlreadyDecided = (r: Pick<ApprovalRecord, 'toolCallId' | 'decision' | 'approver'>): string =>
  `Tool call ${r.toolCallId} was already ${r.decision === 'timed-out' ? 'timed out' : `${r.decision} by ${r.approver}`}`;
export const approvalDigestMismatch = (toolCallId: string, given: string): string =>
  `argsDigest ${given} does not match the arguments of tool call ${toolCallId} awaiting approval; read them (and their digest) with the state query`;
export const APPROVER_REQUIRED = 'approver must be a non-empty name';
/** The run verifies approvals (README "Who may approve") and the decision carries no token. */
export const approvalTokenRequired = (update: 'approve' | 'deny'): string =>
  `${update}: this run accepts only signed decisions: pass token, a JWT bound to this run, tool call and argsDigest (README "Who may approve")`;

/** Tool result texts of a call that was not approved. */
export const toolDenied = (toolName: string, approver: string, reason?: string): string =>
  `Tool ${toolName} was denied by ${approver}: ${reason?.trim() ? reason : 'no reason given'}`;
export const toolNotApproved = (toolName: string, duration: string): string =>
  `Tool ${toolName} was not approved within ${duration}`;

/**
 * What is wrong with a `followUp` / `steer` argument (a string, a user message `{ role: "user", content }`, or a
 * non-empty list of them), one line per problem in the wording every entry point uses (common/validate-messages.ts:
 * `followUp.content: is required`, `steer.1.role: must be "user"`); empty when it is well-formed.
 */
export function incomingMessageErrors(update: 'followUp' | 'steer', value: unknown): string[] {
  if (Array.isArray(value) && value.length === 0)
    return [`${update}: expected at least one message, got an empty list`];
  return incomingMessagesErrors(value, update);
}

/** What is wrong with a `cancel` argument: a reason is absent, null or text (the Update refuses anything else). */
export function cancelReasonErrors(reason: unknown): string[] {
  return reason === undefined || reason === null || typeof reason === 'string'
    ? []
    : [`cancel: the reason must be text, got ${JSON.stringify(reason)}`];
}

/** Errors of an `approve` / `deny` argument's shape (the workflow then checks it against the pending calls). */
export function approvalInputErrors(value: unknown): string[] {
  if (!value || typeof value !== 'object' || Array.isArray(value))
    return ['expected { toolCallId, argsDigest, approver, reason? }'];
  const v = value as Record<string, unknown>;
  const errors: string[] = [];
  if (typeof v.toolCallId !== 'string' || !v.toolCallId) errors.push('toolCallId must be a non-empty string');
  if (typeof v.argsDigest !== 'string' || !v.argsDigest) errors.push('argsDigest must be a non-empty string');
  if (v.token !== undefined && (typeof v.token !== 'string' || !v.token))
    errors.push('token must be a non-empty string (a compact JWS)');
  const signed = typeof v.token === 'string' && v.token !== '';
  if (
    signed
      ? v.approver !== undefined && typeof v.approver !== 'string'
      : typeof v.approver !== 'string' || !v.approver.trim()
  )
    errors.push(APPROVER_REQUIRED);
  if (v.reason !== undefined && typeof v.reason !== 'string') errors.push('reason must be text');
  return errors;
}

/**
 * A result's details with the approval decision added as `details.approval`: an object's fields are kept, any other
 * value moves to `details.value`.
 */
export function detailsWithApproval(details: unknown, approval: ApprovalRecord): Record<string, unknown> {
  if (details === undefined || details === null) return { approval };
  if (typeof details === 'object' && !Array.isArray(details))
    return { ...(details as Record<string, unknown>), approval };
  return { value: details, approval };
}
