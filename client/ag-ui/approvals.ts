/**
 * Approvals as AG-UI human-in-the-loop interrupts: a tool call waiting for a person ends the AG-UI run with
 * `RUN_FINISHED { outcome: { type: 'interrupt', interrupts } }`, one interrupt per pending call (its id is the tool
 * call id; `metadata.keel` has the tool, the arguments and their `argsDigest`). The client answers on its next run
 * with `resume: [{ interruptId, status, payload }]`: `status: 'resolved'` with `payload { approved, argsDigest,
 * approver?, reason?, token? }` approves or denies through `AgentRunHandle.approve` / `deny` (the same digest and token
 * rules), `status: 'cancelled'` denies.
 */
import type { Interrupt, ResumeEntry } from '@ag-ui/core';
import type { AgentRunHandle } from '../agent-client.js';
import type { ApprovalDecisionInput, ApprovalRecord, PendingApproval } from '../../common/updates.js';

/** The interrupt `reason` of a tool call waiting for approval. */
export const APPROVAL_REASON = 'keel:tool_approval';

/** The JSON Schema of the answer an approval interrupt asks for. */
export const APPROVAL_RESPONSE_SCHEMA = {
  type: 'object',
  required: ['approved', 'argsDigest'],
  properties: {
    approved: { type: 'boolean' },
    argsDigest: { type: 'string', description: "the interrupt's metadata.keel.argsDigest" },
    approver: { type: 'string' },
    reason: { type: 'string' },
    token: { type: 'string', description: 'a signed approval token, when the worker verifies approvals' },
  },
} as const;

/** A pending approval as an AG-UI interrupt. */
export function approvalInterrupt(p: PendingApproval): Interrupt {
  const { toolCallId, toolName, args, argsDigest } = p;
  return {
    id: toolCallId,
    reason: APPROVAL_REASON,
    message: `${toolName} ${JSON.stringify(args)} awaits approval`,
    toolCallId,
    responseSchema: APPROVAL_RESPONSE_SCHEMA,
    metadata: { keel: { toolName, args, argsDigest, ...(p.workflowId ? { workflowId: p.workflowId } : {}) } },
  };
}

/** The decision a resume entry asks for, or what is wrong with it. */
export function decisionOf(
  entry: ResumeEntry,
  index: number,
  defaultApprover: string,
): { approve: boolean; decision: ApprovalDecisionInput } | { error: string } {
  const at = `Invalid RunAgentInput: resume.${index}`;
  const p = (entry.payload ?? {}) as Record<string, unknown>;
  if (typeof p.argsDigest !== 'string' || !p.argsDigest)
    return { error: `${at}.payload.argsDigest: is required (the interrupt's metadata.keel.argsDigest)` };
  const approve = entry.status === 'resolved' && p.approved === true;
  if (entry.status === 'resolved' && typeof p.approved !== 'boolean')
    return { error: `${at}.payload.approved: expected true or false` };
  for (const k of ['approver', 'reason', 'token'] as const)
    if (p[k] !== undefined && typeof p[k] !== 'string') return { error: `${at}.payload.${k}: expected text` };
  const reason = (p.reason as string | undefined) ?? (entry.status === 'cancelled' ? 'cancelled' : undefined);
  const decision: ApprovalDecisionInput = {
    toolCallId: entry.interruptId,
    argsDigest: p.argsDigest,
    ...(p.token ? { token: p.token as string } : { approver: (p.approver as string | undefined) ?? defaultApprover }),
    ...(reason !== undefined ? { reason } : {}),
  };
  return { approve, decision };
}

/** Sends the decisions of `resume` (each checked first: nothing is sent when one is malformed). */
export async function answerInterrupts(
  handle: AgentRunHandle,
  resume: ResumeEntry[],
  defaultApprover: string,
): Promise<ApprovalRecord[]> {
  const decisions = resume.map((entry, i) => decisionOf(entry, i, defaultApprover));
  const bad = decisions.find((d) => 'error' in d);
  if (bad && 'error' in bad) throw new InvalidResumeError(bad.error);
  const out: ApprovalRecord[] = [];
  for (const d of decisions as { approve: boolean; decision: ApprovalDecisionInput }[])
    out.push(await (d.approve ? handle.approve(d.decision) : handle.deny(d.decision)));
  return out;
}

/** A resume entry the endpoint cannot send (its message says which field). */
export class InvalidResumeError extends Error {
  override name = 'InvalidResumeError';
}
