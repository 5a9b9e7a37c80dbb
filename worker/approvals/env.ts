/**
 * Approvals of `npm run worker` / the compose worker (worker/main.ts) from its environment: the choices `keel worker`
 * takes as flags, decided by the same rules (settings.ts), read from the variables of the names table (names.ts).
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
import { createVerifyApproval, type ApprovalsOptions } from '../../activities/approvals/verify-approval.js';
import type { ToolDefinition } from '../../activities/tools/define-tool.js';
import { commaList } from '../../common/comma-list.js';
import {
  APPROVAL_ENV_NAMES,
  APPROVAL_SETTINGS,
  APPROVE_SETTING,
  UNAUTHENTICATED_ENV_VALUE,
  type ApprovalFlags,
} from './names.js';
import { approvalsFromSettings, requireApproval } from './settings.js';

const { jwks, jwksUrl, hmacSecretFile, unauthenticated } = APPROVAL_SETTINGS;

/**
 * `tools` with `KEEL_APPROVE`'s tools waiting for approval, and the worker's `approvals` (undefined: nothing asks, or
 * `decides` is false: a `tools` worker, which gates calls but decides none, README "Worker roles"). Throws a text
 * naming the variables to set when the settings are missing or contradict each other.
 */
export function approvalsFromEnv(
  tools: ToolDefinition[],
  decides: boolean,
): { tools: ToolDefinition[]; approvals?: ApprovalsOptions } {
  const gated = requireApproval(tools, commaList(process.env[APPROVE_SETTING.env] ?? ''), APPROVAL_ENV_NAMES);
  if (!decides) return { tools: gated };
  const authentication = process.env[unauthenticated.env] || undefined;
  if (authentication !== undefined && authentication !== UNAUTHENTICATED_ENV_VALUE)
    throw new Error(
      `${unauthenticated.env} must be ${UNAUTHENTICATED_ENV_VALUE} (any approver name, development only) or unset; ` +
        `the keys of signed decisions come from ${jwks.env}, ${jwksUrl.env} or ${hmacSecretFile.env}`,
    );
  const approvals = approvalsFromSettings(settingsFromEnv(), gated, false, APPROVAL_ENV_NAMES);
  createVerifyApproval(approvals); // an unreadable key file or a short secret: said now, not as a connection failure
  return { tools: gated, ...(approvals ? { approvals } : {}) };
}

/** Each setting of the names table from its variable (unset or empty: not given). */
function settingsFromEnv(): ApprovalFlags {
  const flags: Record<string, string | boolean | undefined> = {};
  for (const s of Object.values(APPROVAL_SETTINGS))
    flags[s.option] =
      s === unauthenticated ? process.env[s.env] === UNAUTHENTICATED_ENV_VALUE : process.env[s.env] || undefined;
  return flags as ApprovalFlags;
}
