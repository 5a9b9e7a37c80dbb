/**
 * Who may call the codec server (client/codec-server.ts; README "Reading encrypted runs: the codec server"): a static
 * bearer token of at least {@link MIN_CODEC_TOKEN_CHARS} characters, or JWTs (the per-user OIDC token the Temporal Web
 * UI forwards) verified with `jose` against a JWKS (file or URL), with `exp`, `iss` and `aud` checked and, per
 * namespace, a claim that must list the request's `X-Namespace`. Checked once at start: a misconfiguration throws
 * {@link CodecServerConfigError} with what to change. Never imported by workflow code.
 */
import { readFileSync } from 'node:fs';
import { createHash, timingSafeEqual } from 'node:crypto';
import { createLocalJWKSet, createRemoteJWKSet, jwtVerify, type JSONWebKeySet, type JWTVerifyGetKey } from 'jose';

/** A static token shorter than this is refused at start (a guessable token guards every run's plaintext). */
export const MIN_CODEC_TOKEN_CHARS = 32;

/** Thrown when the codec server must not start as configured; the message says what to do. */
export class CodecServerConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CodecServerConfigError';
  }
}

/** JWT (OIDC) verification of the bearer: exactly one of `jwks` (a JWK Set or its file) and `jwksUrl`. */
export interface CodecJwtOptions {
  jwks?: JSONWebKeySet | string;
  jwksUrl?: string;
  /** The `iss` tokens must carry (one of these, if a list); unchecked when absent. */
  issuer?: string | string[];
  /** The `aud` tokens must carry; unchecked when absent. */
  audience?: string;
  /**
   * A claim (a string or a list of strings) that must name the request's namespace (`X-Namespace`); absent: a verified
   * token may decode for every namespace the server serves.
   */
  namespaceClaim?: string;
}

/** What the request presented and asks for. */
export interface CodecCaller {
  authorization: string | undefined;
  namespace: string | undefined;
}

/** Why a caller is refused: 401 (who are you) or 403 (not for this namespace), with the text. */
export type CodecAuthResult = { ok: true } | { ok: false; status: 401 | 403; text: string };

export type CodecAuth = (caller: CodecCaller) => Promise<CodecAuthResult>;

const UNAUTHORIZED = 'missing or wrong bearer token: send Authorization: Bearer <the codec server token>';

function bearer(header: string | undefined): string | undefined {
  return /^Bearer (.+)$/i.exec(header ?? '')?.[1]?.trim();
}

/** The static-token check: constant time (both sides hashed to equal lengths). */
export function tokenAuth(token: string): CodecAuth {
  if (token.length < MIN_CODEC_TOKEN_CHARS)
    throw new CodecServerConfigError(
      `the codec server token has ${token.length} characters; give one of at least ${MIN_CODEC_TOKEN_CHARS} ` +
        `(e.g. openssl rand -hex 32 > codec.token)`,
    );
  const digest = (s: string) => createHash('sha256').update(s).digest();
  const want = digest(token);
  return async ({ authorization }) => {
    const got = bearer(authorization);
    return got !== undefined && timingSafeEqual(digest(got), want)
      ? { ok: true }
      : { ok: false, status: 401, text: UNAUTHORIZED };
  };
}

function jwksOf(o: CodecJwtOptions): JWTVerifyGetKey {
  if ((o.jwks === undefined) === (o.jwksUrl === undefined))
    throw new CodecServerConfigError(
      'JWT verification needs exactly one of a JWKS file (--jwks) and a JWKS URL (--jwks-url)',
    );
  if (o.jwksUrl !== undefined) return createRemoteJWKSet(new URL(o.jwksUrl));
  let set = o.jwks as JSONWebKeySet | string;
  if (typeof set === 'string') {
    try {
      set = JSON.parse(readFileSync(set, 'utf8')) as JSONWebKeySet;
    } catch (err) {
      throw new CodecServerConfigError(`--jwks ${String(o.jwks)}: cannot read a JWK Set (${(err as Error).message})`);
    }
  }
  if (!Array.isArray(set?.keys)) throw new CodecServerConfigError('the JWKS must be a JWK Set ({ "keys": [...] })');
  return createLocalJWKSet(set);
}

/** The JWT check: signature, `exp` (required), `iss` / `aud` when given, and the namespace claim when given. */
export function jwtAuth(o: CodecJwtOptions): CodecAuth {
  const keys = jwksOf(o);
  return async ({ authorization, namespace }) => {
    const token = bearer(authorization);
    if (token === undefined)
      return { ok: false, status: 401, text: 'missing bearer token: send Authorization: Bearer <your token>' };
    let claims: Record<string, unknown>;
    try {
      claims = (
        await jwtVerify(token, keys, {
          requiredClaims: ['exp'],
          ...(o.issuer !== undefined ? { issuer: o.issuer } : {}),
          ...(o.audience !== undefined ? { audience: o.audience } : {}),
        })
      ).payload;
    } catch (err) {
      return { ok: false, status: 401, text: `the bearer token is not accepted: ${(err as Error).message}` };
    }
    if (o.namespaceClaim === undefined) return { ok: true };
    const listed = claims[o.namespaceClaim];
    const names = typeof listed === 'string' ? [listed] : Array.isArray(listed) ? listed : [];
    return namespace !== undefined && names.includes(namespace)
      ? { ok: true }
      : {
          ok: false,
          status: 403,
          text: `the token's ${o.namespaceClaim} claim does not name namespace ${namespace ?? '(no X-Namespace header)'}`,
        };
  };
}
