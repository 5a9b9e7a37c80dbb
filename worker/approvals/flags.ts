/**
 * `keel worker` / `keel dev` flags for who may approve (README "Who may approve"), derived from the names table
 * (names.ts): where the issuer's keys are (`--approvals-jwks`, `--approvals-jwks-url`, or an HS256 secret from
 * `--approvals-hmac-secret-file` or `$KEEL_APPROVAL_HMAC_SECRET` — never a secret on the command line),
 * `--approvals-issuer`, `--approvals-audience`, and `--approvals-unauthenticated` (free-text approvers). `keel dev`
 * without any of them is unauthenticated when a tool can ask for approval (announced at start); `keel worker` without
 * them refuses to start when a tool can ask for approval. Also `--approve` (tools whose every call waits). The rules are
 * settings.ts's, which `npm run worker` (env.ts) applies to its environment; here a refusal is an
 * {@link ApprovalSettingsError} naming the flags, which the CLI reports as a usage error (exit 2).
 */
import type { Command } from 'commander';
import type { ApprovalsOptions } from '../../activities/approvals/verify-approval.js';
import type { ToolDefinition } from '../../activities/tools/define-tool.js';
import { APPROVAL_FLAG_NAMES, APPROVAL_SETTINGS, settingHelp, type ApprovalFlags } from './names.js';
import { approvalsFromSettings, requireApproval } from './settings.js';

export { HMAC_SECRET_ENV, type ApprovalFlags } from './names.js';
export { ApprovalSettingsError } from './settings.js';

/** Adds the who-may-approve flags of the names table to `cmd`, in its order. */
export function approvalOptions(cmd: Command): Command {
  for (const s of Object.values(APPROVAL_SETTINGS)) cmd.option(s.flag, settingHelp(s));
  return cmd;
}

/** The worker's `approvals` from the flags (settings.ts `approvalsFromSettings`); a refusal names the flags. */
export function approvalsFromFlags(
  flags: ApprovalFlags,
  tools: ToolDefinition[],
  dev: boolean,
): ApprovalsOptions | undefined {
  return approvalsFromSettings(flags, tools, dev, APPROVAL_FLAG_NAMES);
}

/** `--approve`: the named tools wait for approval on every call (settings.ts `requireApproval`); a refusal names it. */
export function withApproval(tools: ToolDefinition[], approve: string[]): ToolDefinition[] {
  return requireApproval(tools, approve, APPROVAL_FLAG_NAMES);
}
