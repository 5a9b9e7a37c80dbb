/**
 * Approvals of `npm run worker` / the compose worker (worker/main.ts) from its environment: the choices `keel worker`
 * takes as flags, decided by the same rules (worker/approval-settings.ts), spelled as variables.
 *
 * - `KEEL_APPROVE=bash,write`: tools whose every call waits for approval;
 * - who may approve, one of: `KEEL_APPROVALS_JWKS_FILE` (a JWK Set file), `KEEL_APPROVALS_JWKS_URL`,
 *   `KEEL_APPROVALS_HMAC_SECRET_FILE` (a file holding the HS256 secret; or the secret itself in
 *   `KEEL_APPROVAL_HMAC_SECRET`), with `KEEL_APPROVALS_ISSUER` / `KEEL_APPROVALS_AUDIENCE`; or
 *   `KEEL_APPROVALS_AUTHENTICATION=none` (any approver name, announced at start).
 *
 * Secure by default: a tool that waits for approval and nothing saying who may approve is refused, naming the variables.
 * No text here holds a variable's value except file paths, URLs and tool names.
 */
import { createVerifyApproval, type ApprovalsOptions } from '../activities/approvals/verify-approval.js';
import type { ToolDefinition } from '../activities/tools/define-tool.js';
import { commaList } from '../common/comma-list.js';
import {
  approvalsFromSettings,
  withApproval,
  type ApprovalFlags,
  type ApprovalSettingNames,
} from './approval-settings.js';

/** The settings' names in texts: the variables. */
export const APPROVAL_ENV_NAMES: ApprovalSettingNames = {
  approve: 'KEEL_APPROVE=',
  jwks: 'KEEL_APPROVALS_JWKS_FILE',
  jwksUrl: 'KEEL_APPROVALS_JWKS_URL',
  hmacSecretFile: 'KEEL_APPROVALS_HMAC_SECRET_FILE',
  issuer: 'KEEL_APPROVALS_ISSUER',
  audience: 'KEEL_APPROVALS_AUDIENCE',
  maxTokenAge: 'KEEL_APPROVALS_MAX_TOKEN_AGE',
  unauthenticated: 'KEEL_APPROVALS_AUTHENTICATION=none',
  file: '=<file>',
  url: '=<url>',
};

/**
 * `tools` with `KEEL_APPROVE`'s tools waiting for approval, and the worker's `approvals` (undefined: nothing asks, or
 * `decides` is false: a `tools` worker, which gates calls but decides none, README "Worker roles"). Throws a text
 * naming the variables to set when the settings are missing or contradict each other.
 */
export function approvalsFromEnv(
  tools: ToolDefinition[],
  decides: boolean,
): { tools: ToolDefinition[]; approvals?: ApprovalsOptions } {
  const gated = withApproval(tools, commaList(process.env.KEEL_APPROVE ?? ''), APPROVAL_ENV_NAMES);
  if (!decides) return { tools: gated };
  const authentication = process.env.KEEL_APPROVALS_AUTHENTICATION || undefined;
  if (authentication !== undefined && authentication !== 'none')
    throw new Error(
      `KEEL_APPROVALS_AUTHENTICATION must be none (any approver name, development only) or unset; the keys of signed ` +
        `decisions come from KEEL_APPROVALS_JWKS_FILE, KEEL_APPROVALS_JWKS_URL or KEEL_APPROVALS_HMAC_SECRET_FILE`,
    );
  const value = (name: string) => process.env[name] || undefined;
  const flags: ApprovalFlags = {
    approvalsJwks: value('KEEL_APPROVALS_JWKS_FILE'),
    approvalsJwksUrl: value('KEEL_APPROVALS_JWKS_URL'),
    approvalsHmacSecretFile: value('KEEL_APPROVALS_HMAC_SECRET_FILE'),
    approvalsIssuer: value('KEEL_APPROVALS_ISSUER'),
    approvalsAudience: value('KEEL_APPROVALS_AUDIENCE'),
    approvalsMaxTokenAge: value('KEEL_APPROVALS_MAX_TOKEN_AGE'),
    approvalsUnauthenticated: authentication === 'none',
  };
  const approvals = approvalsFromSettings(flags, gated, false, APPROVAL_ENV_NAMES);
  createVerifyApproval(approvals); // an unreadable key file or a short secret: said now, not as a connection failure
  return { tools: gated, ...(approvals ? { approvals } : {}) };
}
