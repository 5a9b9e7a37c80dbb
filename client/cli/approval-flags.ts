/**
 * `keel worker` / `keel dev` flags for who may approve (README "Who may approve"): where the issuer's keys are
 * (`--approvals-jwks`, `--approvals-jwks-url`, or an HS256 secret from `--approvals-hmac-secret-file` or
 * `$KEEL_APPROVAL_HMAC_SECRET` — never a secret on the command line), `--approvals-issuer`, `--approvals-audience`, and
 * `--approvals-unauthenticated` (free-text approvers). `keel dev` without any of them is unauthenticated when a tool can ask for approval (announced at start);
 * `keel worker` without them refuses to start when a tool can ask for approval.
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
 * unauthenticated (announced at start), `keel worker` a usage error naming the flags.
 */
export function approvalsFromFlags(
  flags: ApprovalFlags,
  tools: ToolDefinition[],
  dev: boolean,
): ApprovalsOptions | undefined {
  const envSecret = process.env[HMAC_SECRET_ENV] || undefined;
  const sources = [
    flags.approvalsJwks !== undefined ? '--approvals-jwks' : undefined,
    flags.approvalsJwksUrl !== undefined ? '--approvals-jwks-url' : undefined,
    flags.approvalsHmacSecretFile !== undefined ? '--approvals-hmac-secret-file' : undefined,
    envSecret !== undefined && flags.approvalsHmacSecretFile === undefined ? `$${HMAC_SECRET_ENV}` : undefined,
  ].filter((s): s is string => s !== undefined);
  if (flags.approvalsUnauthenticated && sources.length > 0)
    throw usageError(`--approvals-unauthenticated and ${sources.join(', ')} contradict each other; give one`);
  if (sources.length > 1) throw usageError(`give one of ${sources.join(', ')}: the approval tokens' keys`);
  if (flags.approvalsUnauthenticated) return { authentication: 'none' };
  if (sources.length === 0) {
    if (flags.approvalsIssuer !== undefined || flags.approvalsAudience !== undefined)
      throw usageError(
        `--approvals-issuer and --approvals-audience need the keys: --approvals-jwks <file>, --approvals-jwks-url <url> or --approvals-hmac-secret-file <file>`,
      );
    const askers = approvalAskers(tools, undefined);
    if (askers.length > 0 && dev) return { authentication: 'none' }; // announced at worker start
    if (askers.length > 0)
      throw usageError(
        `tools ${askers.join(', ')} wait for approval, but nothing says who may approve: give --approvals-jwks <file>, ` +
          '--approvals-jwks-url <url> or --approvals-hmac-secret-file <file> to accept only signed decisions, or ' +
          '--approvals-unauthenticated to accept any approver name (development only)',
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
