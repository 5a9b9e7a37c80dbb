/**
 * The environment of every process a built-in tool starts (`bash` commands, `rg`, `fd`), built from an **allowlist**:
 * `PATH`, `HOME`, `LANG`, `TERM` and `TZ` from the worker's environment, plus the names the worker's configuration
 * passes (`builtinTools({ env: { pass: ['GITHUB_TOKEN'] } })`). Nothing else of the worker's environment is copied, so
 * a variable such as `PGPASSWORD`, `DATABASE_URL` or `OTEL_EXPORTER_OTLP_HEADERS` never reaches a tool process.
 *
 * The environment alone does not keep the worker's secrets from a model: an unsandboxed process of the worker's user
 * can read `/proc/<worker pid>/environ` (or `/proc/1/environ` in a container). The sandbox (`sandbox.ts`) is what
 * closes that: its own PID namespace and `/proc`, so no process of the worker is visible. With `sandbox: 'none'` the
 * worker's environment is one `cat /proc/$PPID/environ` away, and the worker says so at start.
 */

/** The names copied from the worker's environment into every tool process (besides those passed explicitly). */
export const TOOL_ENV_ALLOWLIST: readonly string[] = ['PATH', 'HOME', 'LANG', 'TERM', 'TZ'];

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
  /** More names copied from the worker's environment into tool processes (exact names, case-sensitive). */
  pass?: readonly string[];
}

/**
 * Whether `name` looks like a credential (provider keys, `KEEL_*`, `TEMPORAL_*`, `*_KEY`/`*_TOKEN`/`*_SECRET`/
 * `*_PASSWORD`). No longer what decides a tool process's environment (an allowlist does, {@link toolEnvironment});
 * kept for callers that want to flag such names.
 */
export function isWithheldEnvName(name: string): boolean {
  const upper = name.toUpperCase();
  return CREDENTIAL_NAMES.has(upper) || KEEL_OR_TEMPORAL.test(upper) || SECRET_NAME.test(upper);
}

/** {@link TOOL_ENV_ALLOWLIST} and the names in `pass`, with their values in `source` (default `process.env`). */
export function toolEnvironment(
  options: ToolEnvOptions = {},
  source: NodeJS.ProcessEnv = process.env,
): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const name of [...TOOL_ENV_ALLOWLIST, ...(options.pass ?? [])]) {
    const value = source[name];
    if (value !== undefined) out[name] = value;
  }
  return out;
}
