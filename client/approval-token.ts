/**
 * `mintApprovalToken`: an HS256 approval token for small setups and tests (README "Who may approve"). A web backend
 * with its own identity provider mints RS256/ES256 tokens there instead; the claims are the same.
 */
import { SignJWT } from 'jose';
import { APPROVAL_CLAIMS, DEFAULT_APPROVAL_AUDIENCE, type ApprovalVerb } from '../common/approval-claims.js';

export interface MintApprovalTokenOptions {
  /** The HS256 secret the workers verify with (`approvals.authentication.hmacSecret(File)`), at least 32 bytes. */
  secret: string | Uint8Array;
  /** Who decides (`sub`): recorded as the approver. */
  subject: string;
  /** The run's workflow id (`keel_run`). */
  workflowId: string;
  /** The pending call (`keel_tool_call`) and the digest of its arguments (`keel_args_digest`, from `state()`). */
  toolCallId: string;
  argsDigest: string;
  /** The pending call's `requestId` (`keel_request`, from `state().pendingApprovals`): one token, one request. */
  requestId: string;
  /** `approve` or `deny` (`keel_decision`). */
  decision: ApprovalVerb;
  /**
   * Lifetime from now (`exp`): seconds, or a `jose` time span such as `5m`; default `5m`. Workers refuse a lifetime
   * over their `maxTokenAge` (default 15 minutes).
   */
  expiresIn?: number | string;
  /** `aud`, default `keel`. */
  audience?: string;
  /** `iss`, if the workers check one. */
  issuer?: string;
  /** `kid` in the header (recorded as the approval's `keyId`). */
  keyId?: string;
  /** More claims for the worker's `authorizeApproval` (roles, tenant). */
  claims?: Record<string, unknown>;
}

/** A compact JWS (HS256) binding one decision on one pending tool call; pass it as `token` to `approve` / `deny`. */
export async function mintApprovalToken(o: MintApprovalTokenOptions): Promise<string> {
  const secret = typeof o.secret === 'string' ? new TextEncoder().encode(o.secret) : o.secret;
  const jwt = new SignJWT({
    ...o.claims,
    [APPROVAL_CLAIMS.run]: o.workflowId,
    [APPROVAL_CLAIMS.toolCall]: o.toolCallId,
    [APPROVAL_CLAIMS.argsDigest]: o.argsDigest,
    [APPROVAL_CLAIMS.decision]: o.decision,
    [APPROVAL_CLAIMS.request]: o.requestId,
  })
    .setProtectedHeader({ alg: 'HS256', ...(o.keyId ? { kid: o.keyId } : {}) })
    .setSubject(o.subject)
    .setAudience(o.audience ?? DEFAULT_APPROVAL_AUDIENCE)
    .setIssuedAt()
    .setExpirationTime(typeof o.expiresIn === 'number' ? `${o.expiresIn}s` : (o.expiresIn ?? '5m'));
  if (o.issuer) jwt.setIssuer(o.issuer);
  return jwt.sign(secret);
}
