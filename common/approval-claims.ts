/**
 * Signed approvals (README "Who may approve"): the claims that bind an approval token to one decision, and the shapes
 * of the verification the workflow asks of its worker. Plain data; shared by the workflow, the worker and the client.
 */

/**
 * The private claims of an approval token. A token is valid for one decision only: this run (`keel_run`, the workflow
 * id), this tool call (`keel_tool_call`), these arguments (`keel_args_digest`, the pending call's `argsDigest`) and
 * this verb (`keel_decision`: `approve` or `deny`). Besides them the token must carry `sub` (who decides), `exp`, and
 * the audience the worker expects (`aud`, default {@link DEFAULT_APPROVAL_AUDIENCE}).
 */
export const APPROVAL_CLAIMS = {
  run: 'keel_run',
  toolCall: 'keel_tool_call',
  argsDigest: 'keel_args_digest',
  decision: 'keel_decision',
} as const;

/** The audience (`aud`) approval tokens are checked against unless the worker names another. */
export const DEFAULT_APPROVAL_AUDIENCE = 'keel';

export type ApprovalVerb = 'approve' | 'deny';

/** Input of the `verifyApproval` local activity (a local activity: its input, the token, is not written to history). */
export interface VerifyApprovalInput {
  /** The workflow id of the run. */
  run: string;
  toolCallId: string;
  argsDigest: string;
  decision: ApprovalVerb;
  token: string;
  toolName: string;
  /** The pending call's prepared arguments (for the worker's `authorizeApproval`). */
  args: unknown;
  /** The run's `metadata` (tenant and the like, for `authorizeApproval`). */
  metadata: Record<string, unknown>;
}

/** What the verification found: the verified identity, or the exact refusal text the Update answers with. */
export type VerifyApprovalResult =
  { ok: true; subject: string; issuer?: string; keyId?: string } | { ok: false; refusal: string };
