/**
 * Signed approvals (README "Who may approve"): the claims that bind an approval token to one decision, and the shapes
 * of the verification the workflow asks of its worker. Plain data; shared by the workflow, the worker and the client.
 */

/**
 * The private claims of an approval token. A token is valid for one decision only: this run (`keel_run`, the workflow
 * id), this tool call (`keel_tool_call`), these arguments (`keel_args_digest`, the pending call's `argsDigest`) and
 * this verb (`keel_decision`: `approve` or `deny`), and this one request for a decision (`keel_request`, the pending
 * call's `requestId`: a later call with the same id and arguments is a new request, which an old token cannot decide).
 * Besides them the token must carry `sub` (who decides: not empty, not the reserved {@link RESERVED_SUBJECTS}), `iat`
 * (not in the future) and `exp` (at most the worker's `maxTokenAge` after `iat`, default
 * {@link DEFAULT_MAX_TOKEN_AGE}), and the audience the worker expects (`aud`, default {@link DEFAULT_APPROVAL_AUDIENCE}).
 */
export const APPROVAL_CLAIMS = {
  run: 'keel_run',
  toolCall: 'keel_tool_call',
  argsDigest: 'keel_args_digest',
  decision: 'keel_decision',
  request: 'keel_request',
} as const;

/** The longest lifetime (`exp` − `iat`) and age (now − `iat`) of a token a worker accepts unless told otherwise. */
export const DEFAULT_MAX_TOKEN_AGE = '15m';

/** How far a token's `iat` / `exp` / `nbf` may be off the worker's clock unless told otherwise. */
export const DEFAULT_CLOCK_TOLERANCE = '60s';

/** Subjects no token may carry: `keel` is the run's own decisions (timeouts, aborts). */
export const RESERVED_SUBJECTS: readonly string[] = ['keel'];

/** The audience (`aud`) approval tokens are checked against unless the worker names another. */
export const DEFAULT_APPROVAL_AUDIENCE = 'keel';

export type ApprovalVerb = 'approve' | 'deny';

/** Input of the `verifyApproval` local activity (a local activity: its input, the token, is not written to history). */
export interface VerifyApprovalInput {
  /** The workflow id of the run. */
  run: string;
  toolCallId: string;
  argsDigest: string;
  /**
   * The pending request's nonce (`keel_request`); absent only for a call that started waiting under 0.6.2 or earlier
   * and was decided before this worker's code resumed it.
   */
  requestId?: string;
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
