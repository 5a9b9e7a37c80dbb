/**
 * The worker's `approvals` option (README "Who may approve"), resolved once at construction: whether runs started here
 * verify their decisions, the `verifyApproval` activity, and the notice printed at worker start for
 * `authentication: 'none'`. Secure by default: a worker whose tools or hooks can ask for approval and that was given
 * no `approvals` refuses to start, naming both choices.
 */
import type { AgentHooks } from '../../activities/hooks.js';
import { createVerifyApproval, type ApprovalsOptions } from '../../activities/approvals/verify-approval.js';
import type { ToolDefinition } from '../../activities/tools/define-tool.js';
import type { WorkerRole } from '../../common/task-queues.js';

/** Printed (stderr) when a worker starts with `approvals: { authentication: 'none' }`. */
export const APPROVALS_UNAUTHENTICATED_NOTICE =
  '[keel] approvals: authentication none: approve/deny take any approver name, unverified (development only; README "Who may approve")\n';

export interface ResolvedApprovals {
  /** Runs started on this worker verify every decision (`startRun` says so; the workflow keeps it). */
  verified: boolean;
  verifyApproval: ReturnType<typeof createVerifyApproval>;
  /** The line printed at worker start, if any. */
  notice?: string;
}

/** Tools (or hooks) on this worker that can make a call wait for approval. */
export function approvalAskers(tools: ToolDefinition[] | undefined, hooks: AgentHooks | undefined): string[] {
  const names = (tools ?? []).filter((t) => t.approval !== undefined && t.approval !== 'never').map((t) => t.name);
  return hooks?.needsApproval ? [...names, 'hooks.needsApproval'] : names;
}

/**
 * Checks `approvals` against the worker's tools and hooks: throws (the worker does not start) when something can ask
 * for approval and nothing says how decisions are authenticated. A `tools` worker decides no approval: not checked.
 */
export function resolveApprovals(opts: {
  approvals?: ApprovalsOptions;
  tools?: ToolDefinition[];
  hooks?: AgentHooks;
  role?: WorkerRole;
}): ResolvedApprovals {
  const { approvals } = opts;
  if (approvals !== undefined && (typeof approvals !== 'object' || approvals.authentication === undefined))
    throw new TypeError(
      "approvals needs authentication: { jwks | jwksUrl | hmacSecret | hmacSecretFile, issuer?, audience? }, or 'none'",
    );
  const verifyApproval = createVerifyApproval(approvals);
  if (opts.role === 'tools') return { verified: false, verifyApproval };
  if (approvals === undefined) {
    const askers = approvalAskers(opts.tools, opts.hooks);
    if (askers.length > 0)
      throw new Error(
        `Tool calls on this worker can wait for approval (${askers.join(', ')}), but nothing says who may approve: ` +
          'pass approvals: { authentication: { jwks | jwksUrl | hmacSecret | hmacSecretFile } } to accept only signed ' +
          "decisions, or approvals: { authentication: 'none' } to accept any approver name (development only). " +
          'README "Who may approve".',
      );
    return { verified: false, verifyApproval };
  }
  if (approvals.authentication === 'none')
    return { verified: false, verifyApproval, notice: APPROVALS_UNAUTHENTICATED_NOTICE };
  return { verified: true, verifyApproval };
}
