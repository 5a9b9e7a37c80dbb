/**
 * Who may approve, and which tools always wait, decided from a worker's settings (README "Who may approve"): one set of
 * rules for `keel worker` / `keel dev`'s flags (client/cli/approval-flags.ts) and `npm run worker`'s environment
 * (worker/env-approvals.ts), each naming its settings in the texts as it spells them ({@link ApprovalSettingNames}).
 * A refusal is an {@link ApprovalSettingsError}: the CLI exits 2 with it, `npm run worker` prints it and exits 1.
 */
import { spanSeconds, type ApprovalsOptions } from '../activities/approvals/verify-approval.js';
import type { ToolDefinition } from '../activities/tools/define-tool.js';
import { approvalAskers } from './approvals.js';

/** Settings that are missing, unknown or contradict each other; the message says which and what to give. */
export class ApprovalSettingsError extends Error {
  override name = 'ApprovalSettingsError';
}

const refuse = (message: string) => new ApprovalSettingsError(message);

/** The settings, as `keel worker`'s flags name them (commander's option keys). */
export interface ApprovalFlags {
  approvalsJwks?: string;
  approvalsJwksUrl?: string;
  approvalsHmacSecretFile?: string;
  approvalsIssuer?: string;
  approvalsAudience?: string;
  /** The longest lifetime and age of a token (seconds or `15m`); default 15 minutes. */
  approvalsMaxTokenAge?: string;
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
  maxTokenAge: string;
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
  maxTokenAge: '--approvals-max-token-age',
  unauthenticated: '--approvals-unauthenticated',
  file: ' <file>',
  url: ' <url>',
};

/**
 * The worker's `approvals` from its settings. Nothing given while a tool can ask for approval: `keel dev` (`dev`) is
 * unauthenticated (announced at start), any other worker refused, naming the settings as `names` spells them.
 */
export function approvalsFromSettings(
  flags: ApprovalFlags,
  tools: ToolDefinition[],
  dev: boolean,
  names: ApprovalSettingNames,
): ApprovalsOptions | undefined {
  const envSecret = process.env[HMAC_SECRET_ENV] || undefined;
  const sources = [
    flags.approvalsJwks !== undefined ? names.jwks : undefined,
    flags.approvalsJwksUrl !== undefined ? names.jwksUrl : undefined,
    flags.approvalsHmacSecretFile !== undefined ? names.hmacSecretFile : undefined,
    envSecret !== undefined && flags.approvalsHmacSecretFile === undefined ? `$${HMAC_SECRET_ENV}` : undefined,
  ].filter((s): s is string => s !== undefined);
  if (flags.approvalsUnauthenticated && sources.length > 0)
    throw refuse(`${names.unauthenticated} and ${sources.join(', ')} contradict each other; give one`);
  if (sources.length > 1) throw refuse(`give one of ${sources.join(', ')}: the approval tokens' keys`);
  if (flags.approvalsUnauthenticated) return { authentication: 'none' };
  const keys = `${names.jwks}${names.file}, ${names.jwksUrl}${names.url} or ${names.hmacSecretFile}${names.file}`;
  if (sources.length === 0) {
    if (flags.approvalsIssuer !== undefined || flags.approvalsAudience !== undefined)
      throw refuse(`${names.issuer} and ${names.audience} need the keys: ${keys}`);
    if (flags.approvalsMaxTokenAge !== undefined) throw refuse(`${names.maxTokenAge} needs the keys: ${keys}`);
    const askers = approvalAskers(tools, undefined);
    if (askers.length > 0 && dev) return { authentication: 'none' }; // announced at worker start
    if (askers.length > 0)
      throw refuse(
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
      ...(flags.approvalsMaxTokenAge !== undefined
        ? { maxTokenAge: maxTokenAge(flags.approvalsMaxTokenAge, names) }
        : {}),
    },
  };
}

/** A max token age as given (`900`, `15m`): seconds when all digits; a bad one is refused naming the setting. */
function maxTokenAge(value: string, names: ApprovalSettingNames): number | string {
  const given = /^\d+$/.test(value.trim()) ? Number(value.trim()) : value;
  try {
    spanSeconds(given, names.maxTokenAge);
  } catch (err) {
    throw refuse((err as Error).message);
  }
  return given;
}

/**
 * `--approve` (or `KEEL_APPROVE`): the named tools (built-in or from a tools module) need approval for every call
 * (README "Approvals"). A name that is not one of `tools` is refused, listing them.
 */
export function withApproval(
  tools: ToolDefinition[],
  approve: string[],
  names: Pick<ApprovalSettingNames, 'approve'>,
): ToolDefinition[] {
  const known = new Set(tools.map((t) => t.name));
  const unknown = approve.filter((n) => !known.has(n));
  if (unknown.length > 0)
    throw refuse(
      `${names.approve}${unknown.join(',')}: no such tool on this worker (its tools: ${[...known].join(', ') || 'none'})`,
    );
  return tools.map((t) => (approve.includes(t.name) ? { ...t, approval: 'always' as const } : t));
}
