/**
 * Signed approvals (README "Who may approve"): the worker's `approvals` option and the `verifyApproval` local
 * activity, which checks a decision's token with `jose` — signature against the issuer's keys (a JWKS file, object or
 * URL; or an HS256 secret), `exp` and `iat` (required: `iat` not in the future, the token no older and its lifetime
 * no longer than `maxTokenAge`) and `nbf`, a `sub` that is neither empty nor reserved, `aud`, `iss` when configured,
 * the token's binding to this run, tool call, argsDigest, verb and request (common/approval-claims.ts) — and then asks
 * the worker's `authorizeApproval` policy.
 * Every refusal is an exact text the Update answers with; nothing is thrown for a bad token.
 */
import { readFileSync } from 'node:fs';
import { registerWorkerSecretFile } from '../../node-common/worker-secrets.js';
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  errors,
  jwtVerify,
  type JSONWebKeySet,
  type JWTPayload,
  type JWTVerifyGetKey,
} from 'jose';
import {
  APPROVAL_CLAIMS,
  DEFAULT_APPROVAL_AUDIENCE,
  DEFAULT_CLOCK_TOLERANCE,
  DEFAULT_MAX_TOKEN_AGE,
  RESERVED_SUBJECTS,
  type ApprovalVerb,
  type VerifyApprovalInput,
  type VerifyApprovalResult,
} from '../../common/approval-claims.js';
import { thrownMessage } from '../../common/errors.js';

/** Where the issuer's keys come from: exactly one of `jwks`, `jwksUrl`, `hmacSecret`, `hmacSecretFile`. */
export interface ApprovalAuthentication {
  /** The issuer's public keys: a JWK Set, or the path of a file holding one (RS256, ES256, EdDSA, PS256 … tokens). */
  jwks?: JSONWebKeySet | string;
  /** The issuer's JWKS endpoint (fetched and cached by `jose`, refetched for an unknown `kid`). */
  jwksUrl?: string | URL;
  /** A shared secret for HS256 tokens (small setups; at least 32 bytes). Prefer `hmacSecretFile`. */
  hmacSecret?: string | Uint8Array;
  /** A file holding the HS256 secret (trailing newline ignored). */
  hmacSecretFile?: string;
  /** The `iss` tokens must carry (one of these, if a list); unchecked when absent. */
  issuer?: string | string[];
  /** The `aud` tokens must carry; default `keel`. */
  audience?: string;
  /**
   * The longest a token may live (`exp` − `iat`) and the oldest it may be (now − `iat`): seconds or a `jose` time span
   * (`15m`, `1h`); default {@link DEFAULT_MAX_TOKEN_AGE}.
   */
  maxTokenAge?: number | string;
  /** How far `iat`, `exp` and `nbf` may be off this worker's clock: seconds or a time span; default 60 s. */
  clockTolerance?: number | string;
}

/** What `authorizeApproval` is asked about: a verified token's claims, and the call it would decide. */
export interface AuthorizeApprovalInput {
  /** Every claim of the verified token (`sub`, `iss`, custom claims such as roles or tenant). */
  claims: JWTPayload;
  /** `approve` or `deny`. */
  decision: ApprovalVerb;
  toolName: string;
  /** The pending call's prepared arguments. */
  args: unknown;
  /** The run's `metadata` (e.g. its tenant). */
  metadata: Record<string, unknown>;
  /** The run's workflow id. */
  workflowId: string;
}

/**
 * The worker's policy on who may decide what: `true` allows; `false` refuses (`… the approval policy does not allow
 * <sub> to approve <tool>`); a string refuses with that text as the reason. A throw refuses with its message.
 */
export type AuthorizeApproval = (input: AuthorizeApprovalInput) => boolean | string | Promise<boolean | string>;

/**
 * The worker's `approvals` option (README "Who may approve"). `authentication: 'none'` accepts free-text approvers
 * (development only; announced at worker start). Otherwise every decision must carry a token the worker verifies,
 * and `authorizeApproval` (default: any verified subject may decide) is asked next.
 */
export interface ApprovalsOptions {
  authentication: 'none' | ApprovalAuthentication;
  authorizeApproval?: AuthorizeApproval;
}

/** A time span in seconds: a number of seconds, or `<n>s`, `<n>m`, `<n>h`, `<n>d`; a bad one throws naming `setting`. */
export function spanSeconds(value: number | string, setting: string): number {
  if (typeof value === 'number' && Number.isFinite(value) && value >= 0) return value;
  const m = typeof value === 'string' ? /^(\d+)\s*(s|m|h|d)?$/.exec(value.trim()) : null;
  if (!m)
    throw new TypeError(`${setting} must be seconds or a span such as 90s, 15m, 1h; got ${JSON.stringify(value)}`);
  return Number(m[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[(m[2] ?? 's') as 's' | 'm' | 'h' | 'd'];
}

/** The HS256 key needs at least this many bytes (RFC 7518 §3.2). */
const MIN_HMAC_BYTES = 32;
const ASYMMETRIC = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
];

type Key = { kind: 'hmac'; secret: Uint8Array } | { kind: 'jwks'; get: JWTVerifyGetKey };

/**
 * The key source of `auth`, checked at worker start: a misconfiguration throws with what to change (never the secret).
 */
function keyOf(auth: ApprovalAuthentication): Key {
  const given = (['jwks', 'jwksUrl', 'hmacSecret', 'hmacSecretFile'] as const).filter((k) => auth[k] !== undefined);
  if (given.length !== 1)
    throw new TypeError(
      `approvals.authentication needs exactly one of jwks, jwksUrl, hmacSecret, hmacSecretFile${given.length ? `, got ${given.join(', ')}` : ''}`,
    );
  if (auth.jwksUrl !== undefined) return { kind: 'jwks', get: createRemoteJWKSet(new URL(auth.jwksUrl)) };
  if (auth.jwks !== undefined) {
    const set = typeof auth.jwks === 'string' ? readJwks(auth.jwks) : auth.jwks;
    if (!Array.isArray(set?.keys))
      throw new TypeError('approvals.authentication.jwks must be a JWK Set ({ keys: [...] })');
    return { kind: 'jwks', get: createLocalJWKSet(set) };
  }
  const secret =
    auth.hmacSecretFile !== undefined
      ? readSecretFile(auth.hmacSecretFile)
      : typeof auth.hmacSecret === 'string'
        ? new TextEncoder().encode(auth.hmacSecret)
        : auth.hmacSecret!;
  if (secret.length < MIN_HMAC_BYTES)
    throw new TypeError(
      `approvals.authentication: the HMAC secret has ${secret.length} bytes; HS256 needs at least ${MIN_HMAC_BYTES}`,
    );
  return { kind: 'hmac', secret };
}

function readJwks(path: string): JSONWebKeySet {
  try {
    registerWorkerSecretFile(path);
    return JSON.parse(readFileSync(path, 'utf8')) as JSONWebKeySet;
  } catch (err) {
    throw new TypeError(`approvals.authentication.jwks: cannot read a JWK Set from ${path}: ${thrownMessage(err)}`);
  }
}

function readSecretFile(path: string): Uint8Array {
  let text: string;
  try {
    registerWorkerSecretFile(path);
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new TypeError(`approvals.authentication.hmacSecretFile: cannot read ${path}: ${thrownMessage(err)}`);
  }
  return new TextEncoder().encode(text.replace(/\r?\n$/, ''));
}

/** What a worker that does not verify approvals answers a run that expects verification (fail closed). */
export const NOT_VERIFYING =
  'this worker does not verify approvals (its approvals.authentication is none or unset) while the run expects signed decisions; run its workers with the same approvals.authentication';

/**
 * The `verifyApproval` activity of a worker with `approvals` (undefined, or `authentication: 'none'`: every token is
 * refused with {@link NOT_VERIFYING}). Throws at once if the authentication is misconfigured.
 */
export function createVerifyApproval(
  approvals: ApprovalsOptions | undefined,
): (input: VerifyApprovalInput) => Promise<VerifyApprovalResult> {
  const auth = approvals?.authentication;
  if (auth === undefined || auth === 'none')
    return async (input) => ({ ok: false, refusal: refusal(input, NOT_VERIFYING) });
  const key = keyOf(auth);
  const audience = auth.audience ?? DEFAULT_APPROVAL_AUDIENCE;
  const maxAge = spanSeconds(auth.maxTokenAge ?? DEFAULT_MAX_TOKEN_AGE, 'approvals.authentication.maxTokenAge');
  const tolerance = spanSeconds(
    auth.clockTolerance ?? DEFAULT_CLOCK_TOLERANCE,
    'approvals.authentication.clockTolerance',
  );
  const authorize = approvals?.authorizeApproval;
  return async function verifyApproval(input) {
    const why = (text: string): VerifyApprovalResult => ({ ok: false, refusal: refusal(input, text) });
    let payload: JWTPayload;
    let kid: string | undefined;
    try {
      const options = {
        audience,
        ...(auth.issuer !== undefined ? { issuer: auth.issuer } : {}),
        requiredClaims: ['exp', 'sub', 'iat'],
        maxTokenAge: maxAge,
        clockTolerance: tolerance,
        algorithms: key.kind === 'hmac' ? ['HS256'] : ASYMMETRIC,
      };
      const verified =
        key.kind === 'hmac'
          ? await jwtVerify(input.token, key.secret, options)
          : await jwtVerify(input.token, key.get, options);
      payload = verified.payload;
      kid = verified.protectedHeader.kid;
    } catch (err) {
      return why(joseRefusal(err, audience, auth.issuer, maxAge));
    }
    const binding = claimsProblem(payload, maxAge, tolerance) ?? bindingProblem(payload, input);
    if (binding) return why(binding);
    const subject = payload.sub!;
    if (authorize) {
      let verdict: boolean | string;
      try {
        verdict = await authorize({
          claims: payload,
          decision: input.decision,
          toolName: input.toolName,
          args: input.args,
          metadata: input.metadata,
          workflowId: input.run,
        });
      } catch (err) {
        return why(`the approval policy failed: ${thrownMessage(err)}`);
      }
      if (typeof verdict === 'string') return why(verdict);
      if (verdict !== true)
        return why(`the approval policy does not allow ${subject} to ${input.decision} ${input.toolName}`);
    }
    return {
      ok: true,
      subject,
      ...(payload.iss !== undefined ? { issuer: payload.iss } : {}),
      ...(kid !== undefined ? { keyId: kid } : {}),
    };
  };
}

/** `Cannot approve tool call <id>: <why>`: the text a refused decision answers with. */
export function refusal(input: Pick<VerifyApprovalInput, 'decision' | 'toolCallId'>, why: string): string {
  return `Cannot ${input.decision} tool call ${input.toolCallId}: ${why}`;
}

/** A lifetime over `maxAge` (`exp` − `iat`), or a `sub` that names nobody or a reserved name. */
function claimsProblem(payload: JWTPayload, maxAge: number, tolerance: number): string | undefined {
  const lifetime = payload.exp! - payload.iat!;
  if (lifetime > maxAge + tolerance)
    return `the token lives ${lifetime} s (exp − iat); this worker accepts at most ${maxAge} s (approvals maxTokenAge)`;
  const sub = payload.sub!;
  if (typeof sub !== 'string' || sub.trim() === '') return "the token's sub is empty: it must name who decides";
  if (RESERVED_SUBJECTS.includes(sub.trim()))
    return `the token's sub ${JSON.stringify(sub)} is reserved for the run's own decisions`;
  return undefined;
}

/** The token is for another run, call, digest, verb or request. */
function bindingProblem(payload: JWTPayload, input: VerifyApprovalInput): string | undefined {
  const expected: [string, string][] = [
    [APPROVAL_CLAIMS.run, input.run],
    [APPROVAL_CLAIMS.toolCall, input.toolCallId],
    [APPROVAL_CLAIMS.argsDigest, input.argsDigest],
    [APPROVAL_CLAIMS.decision, input.decision],
    // a call that started waiting under 0.6.2 has no request nonce to bind
    ...(input.requestId !== undefined ? [[APPROVAL_CLAIMS.request, input.requestId] as [string, string]] : []),
  ];
  for (const [claim, want] of expected) {
    const got = payload[claim];
    if (got === undefined) return `the token has no ${claim} claim`;
    if (got !== want) return `the token's ${claim} is ${JSON.stringify(got)}, not ${JSON.stringify(want)}`;
  }
  return undefined;
}

const iso = (seconds: unknown) => (typeof seconds === 'number' ? new Date(seconds * 1000).toISOString() : '?');

/** The refusal for a token `jose` did not accept. */
function joseRefusal(err: unknown, audience: string, issuer: string | string[] | undefined, maxAge: number): string {
  if (err instanceof errors.JWTExpired && err.claim === 'iat')
    return `the token was issued at ${iso(err.payload.iat)}, more than ${maxAge} s ago (approvals maxTokenAge)`;
  if (err instanceof errors.JWTExpired) return `the token expired at ${iso(err.payload.exp)}`;
  if (err instanceof errors.JWTClaimValidationFailed) {
    if (err.reason === 'missing') return `the token has no ${err.claim} claim`;
    if (err.claim === 'iat') return `the token's iat ${iso(err.payload.iat)} is in the future`;
    if (err.claim === 'aud') return `the token's audience is not ${audience}`;
    if (err.claim === 'iss') return `the token's issuer is not ${[issuer].flat().join(' or ')}`;
    if (err.claim === 'nbf') return `the token is not valid before ${iso(err.payload.nbf)}`;
    return `the token's ${err.claim} claim is invalid: ${err.message}`;
  }
  if (err instanceof errors.JWSSignatureVerificationFailed)
    return "the token's signature does not verify with the issuer's keys";
  if (err instanceof errors.JWKSNoMatchingKey) return "no key of the issuer's key set matches the token";
  if (err instanceof errors.JOSEAlgNotAllowed) return `the token's algorithm is not accepted: ${err.message}`;
  if (err instanceof errors.JWSInvalid || err instanceof errors.JWTInvalid)
    return `the token is not a valid JWT: ${err.message}`;
  return `the token could not be verified: ${thrownMessage(err)}`;
}
