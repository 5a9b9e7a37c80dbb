/**
 * `keel worker` / `keel dev` flags for who may approve (README "Who may approve"): where the issuer's keys are
 * (`--approvals-jwks`, `--approvals-jwks-url`, or an HS256 secret from `--approvals-hmac-secret-file` or
 * `$KEEL_APPROVAL_HMAC_SECRET` — never a secret on the command line), `--approvals-issuer`, `--approvals-audience`, and
 * `--approvals-unauthenticated` (free-text approvers). `keel dev` without any of them is unauthenticated when a tool can ask for approval (announced at start);
 * `keel worker` without them refuses to start when a tool can ask for approval. Also `--approve` (tools whose every call
 * waits). `npm run worker` (worker/main.ts) takes the same settings from its environment through the same functions
 * (worker/env-approvals.ts), its texts naming the variables.
 */
import type { Command } from 'commander';
import type { ApprovalsOptions } from '../../activities/approvals/verify-approval.js';
import type { ToolDefinition } from '../../activities/tools/define-tool.js';
import { approvalAskers } from '../../worker/approvals.js';
import { usageError } from './context.js';

export interface ApprovalFlags {
  approvalsJwks?: string;
  approvalsJwksUrl?: string;
  approvalsHmacSecretFile?: string;
  approvalsIssuer?: string;
  approvalsAudience?: string;
  approvalsUnauthenticated?: boolean;
}

/** The environment variable holding an HS256 secret (prefer `--approvals-hmac-secret-file`). */
export const HMAC_SECRET_ENV = 'KEEL_APPROVAL_HMAC_SECRET';

/**
 * How each approval setting is spelled where it is given, for the texts that name them: `keel worker`'s flags
 * ({@link APPROVAL_FLAG_NAMES}) or the environment of `npm run worker` (worker/env-approvals.ts). `file` and `url` are
 * what follows a key setting in a hint (` <file>` after a flag, `=<file>` after a variable).
 */
export interface ApprovalSettingNames {
  /** What precedes a list of tool names: `--approve ` or `KEEL_APPROVE=`. */
  approve: string;
  jwks: string;
  jwksUrl: string;
  hmacSecretFile: string;
  issuer: string;
  audience: string;
  /** The whole setting (a flag, or `VARIABLE=none`). */
  unauthenticated: string;
  file: string;
  url: string;
}

export const APPROVAL_FLAG_NAMES: ApprovalSettingNames = {
  approve: '--approve ',
  jwks: '--approvals-jwks',
  jwksUrl: '--approvals-jwks-url',
  hmacSecretFile: '--approvals-hmac-secret-file',
  issuer: '--approvals-issuer',
  audience: '--approvals-audience',
  unauthenticated: '--approvals-unauthenticated',
  file: ' <file>',
  url: ' <url>',
};

export function approvalOptions(cmd: Command): Command {
  return cmd
    .option(
      '--approvals-jwks <file>',
      'accept only approvals signed by the issuer\'s keys in this JWK Set file (README "Who may approve")',
    )
    .option('--approvals-jwks-url <url>', "accept only approvals signed by the issuer's keys at this JWKS URL")
    .option(
      '--approvals-hmac-secret-file <file>',
      `accept only approvals signed (HS256) with the secret in this file (or in $${HMAC_SECRET_ENV})`,
    )
    .option('--approvals-issuer <iss>', 'the issuer (iss) approval tokens must name')
    .option('--approvals-audience <aud>', 'the audience (aud) approval tokens must name (default: keel)')
    .option(
      '--approvals-unauthenticated',
      'accept any approver name, unverified (development only; the default of `keel dev`)',
    );
}

/**
 * The worker's `approvals` from the flags. Nothing given while a tool can ask for approval: `keel dev` (`dev`) is
 * unauthenticated (announced at start), `keel worker` a usage error naming the settings as `names` spells them (default
 * the flags).
 */
export function approvalsFromFlags(
  flags: ApprovalFlags,
  tools: ToolDefinition[],
  dev: boolean,
  names: ApprovalSettingNames = APPROVAL_FLAG_NAMES,
): ApprovalsOptions | undefined {
  const envSecret = process.env[HMAC_SECRET_ENV] || undefined;
  const sources = [
    flags.approvalsJwks !== undefined ? names.jwks : undefined,
    flags.approvalsJwksUrl !== undefined ? names.jwksUrl : undefined,
    flags.approvalsHmacSecretFile !== undefined ? names.hmacSecretFile : undefined,
    envSecret !== undefined && flags.approvalsHmacSecretFile === undefined ? `$${HMAC_SECRET_ENV}` : undefined,
  ].filter((s): s is string => s !== undefined);
  if (flags.approvalsUnauthenticated && sources.length > 0)
    throw usageError(`${names.unauthenticated} and ${sources.join(', ')} contradict each other; give one`);
  if (sources.length > 1) throw usageError(`give one of ${sources.join(', ')}: the approval tokens' keys`);
  if (flags.approvalsUnauthenticated) return { authentication: 'none' };
  const keys = `${names.jwks}${names.file}, ${names.jwksUrl}${names.url} or ${names.hmacSecretFile}${names.file}`;
  if (sources.length === 0) {
    if (flags.approvalsIssuer !== undefined || flags.approvalsAudience !== undefined)
      throw usageError(`${names.issuer} and ${names.audience} need the keys: ${keys}`);
    const askers = approvalAskers(tools, undefined);
    if (askers.length > 0 && dev) return { authentication: 'none' }; // announced at worker start
    if (askers.length > 0)
      throw usageError(
        `tools ${askers.join(', ')} wait for approval, but nothing says who may approve: give ${keys} to accept ` +
          `only signed decisions, or ${names.unauthenticated} to accept any approver name (development only)`,
      );
    return undefined;
  }
  return {
    authentication: {
      ...(flags.approvalsJwks !== undefined ? { jwks: flags.approvalsJwks } : {}),
      ...(flags.approvalsJwksUrl !== undefined ? { jwksUrl: flags.approvalsJwksUrl } : {}),
      ...(flags.approvalsHmacSecretFile !== undefined
        ? { hmacSecretFile: flags.approvalsHmacSecretFile }
        : envSecret !== undefined
          ? { hmacSecret: envSecret }
          : {}),
      ...(flags.approvalsIssuer !== undefined ? { issuer: flags.approvalsIssuer } : {}),
      ...(flags.approvalsAudience !== undefined ? { audience: flags.approvalsAudience } : {}),
    },
  };
}

/**
 * `--approve` (or `KEEL_APPROVE`): the named tools (built-in or from a tools module) need approval for every call
 * (README "Approvals"). A name that is not one of `tools` is a usage error listing them.
 */
export function withApproval(
  tools: ToolDefinition[],
  approve: string[],
  names: Pick<ApprovalSettingNames, 'approve'> = APPROVAL_FLAG_NAMES,
): ToolDefinition[] {
  const known = new Set(tools.map((t) => t.name));
  const unknown = approve.filter((n) => !known.has(n));
  if (unknown.length > 0)
    throw usageError(
      `${names.approve}${unknown.join(',')}: no such tool on this worker (its tools: ${[...known].join(', ') || 'none'})`,
    );
  return tools.map((t) => (approve.includes(t.name) ? { ...t, approval: 'always' as const } : t));
}

/** `--approve a,b --approve c` → [a, b, c] (commander's collector; `approveNames('a, b')` → [a, b]). */
export function approveNames(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean),
  ];
}
