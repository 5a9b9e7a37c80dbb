/**
 * The environment of every process a built-in tool starts (`bash` commands, `rg`, `fd`): the worker's environment
 * without its secrets, so a model cannot `echo $ANTHROPIC_API_KEY` its way to the worker's credentials.
 *
 * Dropped (names compared case-insensitively):
 * - every variable pi-ai reads for provider credentials ({@link PROVIDER_CREDENTIAL_ENV}, e.g. `ANTHROPIC_API_KEY`,
 *   `AWS_ACCESS_KEY_ID`, `GOOGLE_APPLICATION_CREDENTIALS`);
 * - `KEEL_*` (Keel's own configuration, incl. `KEEL_<PROVIDER>_API_KEY`) and `TEMPORAL_*` (cluster address, TLS, API key);
 * - anything ending in `_KEY`, `_TOKEN`, `_SECRET` or `_PASSWORD` (and the bare names `KEY`, `TOKEN`, …).
 *
 * A name in `pass` is kept even when a rule above would drop it (`builtinTools({ env: { pass: ['GITHUB_TOKEN'] } })`).
 */

/** Variables pi-ai 1.6.0 reads for provider credentials that the suffix rules alone would not catch (and those they do). */
export const PROVIDER_CREDENTIAL_ENV: readonly string[] = [
  'ANTHROPIC_API_KEY',
  'ANTHROPIC_AUTH_TOKEN',
  'ANTHROPIC_OAUTH_TOKEN',
  'ANTHROPIC_FEDERATION_RULE_ID',
  'ANTHROPIC_ORGANIZATION_ID',
  'ANTHROPIC_SERVICE_ACCOUNT_ID',
  'ANTHROPIC_IDENTITY_TOKEN_FILE',
  'ANTHROPIC_WORKSPACE_ID',
  'AWS_ACCESS_KEY_ID',
  'AWS_SECRET_ACCESS_KEY',
  'AWS_SESSION_TOKEN',
  'AWS_BEARER_TOKEN_BEDROCK',
  'AWS_PROFILE',
  'AWS_WEB_IDENTITY_TOKEN_FILE',
  'AWS_CONTAINER_CREDENTIALS_FULL_URI',
  'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
  'AWS_CONTAINER_AUTHORIZATION_TOKEN',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'COPILOT_GITHUB_TOKEN',
  'HF_TOKEN',
];

const CREDENTIAL_NAMES = new Set(PROVIDER_CREDENTIAL_ENV);
const SECRET_NAME = /(^|_)(KEY|TOKEN|SECRET|PASSWORD)$/;
const KEEL_OR_TEMPORAL = /^(KEEL|TEMPORAL)_/;

/** Options of the tool-process environment. */
export interface ToolEnvOptions {
  /** Names passed through from the worker's environment although they look secret (exact names, case-sensitive). */
  pass?: readonly string[];
}

/** Whether `name` is withheld from tool processes unless passed explicitly. */
export function isWithheldEnvName(name: string): boolean {
  const upper = name.toUpperCase();
  return CREDENTIAL_NAMES.has(upper) || KEEL_OR_TEMPORAL.test(upper) || SECRET_NAME.test(upper);
}

/** A copy of `source` (default `process.env`) without the withheld variables, except those named in `pass`. */
export function toolEnvironment(
  options: ToolEnvOptions = {},
  source: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const pass = new Set(options.pass ?? []);
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(source)) {
    if (value !== undefined && (pass.has(name) || !isWithheldEnvName(name))) out[name] = value;
  }
  return out;
}
