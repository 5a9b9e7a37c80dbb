/**
 * `keel worker` / `keel dev` flags for who may approve (README "Who may approve"): where the issuer's keys are
 * (`--approvals-jwks`, `--approvals-jwks-url`, or an HS256 secret from `--approvals-hmac-secret-file` or
 * `$KEEL_APPROVAL_HMAC_SECRET` — never a secret on the command line), `--approvals-issuer`, `--approvals-audience`, and
 * `--approvals-unauthenticated` (free-text approvers). `keel dev` without any of them is unauthenticated when a tool can ask for approval (announced at start);
 * `keel worker` without them refuses to start when a tool can ask for approval. Also `--approve` (tools whose every call
 * waits). The rules are worker/approval-settings.ts's, which `npm run worker` (worker/env-approvals.ts) applies to its
 * environment; here their refusals are usage errors (exit 2) naming the flags.
 */
import type { Command } from 'commander';
import type { ApprovalsOptions } from '../../activities/approvals/verify-approval.js';
import type { ToolDefinition } from '../../activities/tools/define-tool.js';
import * as settings from '../../worker/approval-settings.js';
import { usageError } from '../../cli/context.js';

export { HMAC_SECRET_ENV, type ApprovalFlags } from '../../worker/approval-settings.js';

export function approvalOptions(cmd: Command): Command {
  return cmd
    .option(
      '--approvals-jwks <file>',
      'accept only approvals signed by the issuer\'s keys in this JWK Set file (README "Who may approve")',
    )
    .option('--approvals-jwks-url <url>', "accept only approvals signed by the issuer's keys at this JWKS URL")
    .option(
      '--approvals-hmac-secret-file <file>',
      `accept only approvals signed (HS256) with the secret in this file (or in $${settings.HMAC_SECRET_ENV})`,
    )
    .option('--approvals-issuer <iss>', 'the issuer (iss) approval tokens must name')
    .option('--approvals-audience <aud>', 'the audience (aud) approval tokens must name (default: keel)')
    .option(
      '--approvals-max-token-age <span>',
      'the longest lifetime (exp − iat) and age of an approval token: seconds, or 90s, 15m, 1h (default: 15m)',
    )
    .option(
      '--approvals-unauthenticated',
      'accept any approver name, unverified (development only; the default of `keel dev`)',
    );
}

/** The worker's `approvals` from the flags (worker/approval-settings.ts `approvalsFromSettings`); a refusal exits 2. */
export function approvalsFromFlags(
  flags: settings.ApprovalFlags,
  tools: ToolDefinition[],
  dev: boolean,
): ApprovalsOptions | undefined {
  return asUsage(() => settings.approvalsFromSettings(flags, tools, dev, settings.APPROVAL_FLAG_NAMES));
}

/** `--approve`: the named tools wait for approval on every call (worker/approval-settings.ts); a refusal exits 2. */
export function withApproval(tools: ToolDefinition[], approve: string[]): ToolDefinition[] {
  return asUsage(() => settings.withApproval(tools, approve, settings.APPROVAL_FLAG_NAMES));
}

function asUsage<T>(decide: () => T): T {
  try {
    return decide();
  } catch (err) {
    throw err instanceof settings.ApprovalSettingsError ? usageError(err.message) : err;
  }
}
