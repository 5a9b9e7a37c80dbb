/**
 * Who may approve, and which tools always wait, decided from a worker's settings (README "Who may approve"): one set of
 * rules for `keel worker` / `keel dev`'s flags (flags.ts) and `npm run worker`'s environment (env.ts), each naming its
 * settings in the texts as it spells them (names.ts {@link ApprovalSettingNames}).
 * A refusal is an {@link ApprovalSettingsError}: the CLI exits 2 with it, `npm run worker` prints it and exits 1.
 */
import { spanSeconds, type ApprovalsOptions } from '../../activities/approvals/verify-approval.js';
import type { ToolDefinition } from '../../activities/tools/define-tool.js';
import { HMAC_SECRET_ENV, type ApprovalFlags, type ApprovalSettingNames } from './names.js';
import { approvalAskers } from './resolve.js';

/** Settings that are missing, unknown or contradict each other; the message says which and what to give. */
export class ApprovalSettingsError extends Error {
  override name = 'ApprovalSettingsError';
}

const refuse = (message: string) => new ApprovalSettingsError(message);

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
export function requireApproval(
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
