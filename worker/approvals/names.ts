/**
 * The approval settings' names table (README "Who may approve"): each setting once — its option name
 * ({@link ApprovalFlags}), its `keel worker` / `keel dev` flag, its `npm run worker` environment variable, its default
 * and its doc line. The CLI's flags (flags.ts), the environment reader (env.ts) and the texts that name a setting
 * ({@link APPROVAL_FLAG_NAMES}, {@link APPROVAL_ENV_NAMES}) are derived from it.
 */

/** The environment variable holding an HS256 secret (prefer `--approvals-hmac-secret-file`). */
export const HMAC_SECRET_ENV = 'KEEL_APPROVAL_HMAC_SECRET';

/** The settings, as `keel worker`'s flags name them (commander's option keys); the worker's `approvals` comes from them. */
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

/** One approval setting: how it is named on each side, its default and its doc line. */
export interface ApprovalSetting<K extends keyof ApprovalFlags = keyof ApprovalFlags> {
  /** Its option name ({@link ApprovalFlags}). */
  option: K;
  /** Its flag, with the placeholder of its value when it takes one (`--approvals-jwks <file>`). */
  flag: string;
  /** Its environment variable. */
  env: string;
  /** Its default, said in the doc line (`(default: …)`). */
  default?: string;
  /** Its `--help` line (without the default). */
  doc: string;
}

/** Who may approve: the settings in `--help` order. */
export const APPROVAL_SETTINGS = {
  jwks: {
    option: 'approvalsJwks',
    flag: '--approvals-jwks <file>',
    env: 'KEEL_APPROVALS_JWKS_FILE',
    doc: 'accept only approvals signed by the issuer\'s keys in this JWK Set file (README "Who may approve")',
  },
  jwksUrl: {
    option: 'approvalsJwksUrl',
    flag: '--approvals-jwks-url <url>',
    env: 'KEEL_APPROVALS_JWKS_URL',
    doc: "accept only approvals signed by the issuer's keys at this JWKS URL",
  },
  hmacSecretFile: {
    option: 'approvalsHmacSecretFile',
    flag: '--approvals-hmac-secret-file <file>',
    env: 'KEEL_APPROVALS_HMAC_SECRET_FILE',
    doc: `accept only approvals signed (HS256) with the secret in this file (or in $${HMAC_SECRET_ENV})`,
  },
  issuer: {
    option: 'approvalsIssuer',
    flag: '--approvals-issuer <iss>',
    env: 'KEEL_APPROVALS_ISSUER',
    doc: 'the issuer (iss) approval tokens must name',
  },
  audience: {
    option: 'approvalsAudience',
    flag: '--approvals-audience <aud>',
    env: 'KEEL_APPROVALS_AUDIENCE',
    default: 'keel',
    doc: 'the audience (aud) approval tokens must name',
  },
  maxTokenAge: {
    option: 'approvalsMaxTokenAge',
    flag: '--approvals-max-token-age <span>',
    env: 'KEEL_APPROVALS_MAX_TOKEN_AGE',
    default: '15m',
    doc: 'the longest lifetime (exp − iat) and age of an approval token: seconds, or 90s, 15m, 1h',
  },
  unauthenticated: {
    option: 'approvalsUnauthenticated',
    flag: '--approvals-unauthenticated',
    env: 'KEEL_APPROVALS_AUTHENTICATION',
    doc: 'accept any approver name, unverified (development only; the default of `keel dev`)',
  },
} as const satisfies Record<string, ApprovalSetting>;

/** The value of {@link APPROVAL_SETTINGS}`.unauthenticated.env` that means unauthenticated. */
export const UNAUTHENTICATED_ENV_VALUE = 'none';

/** `--approve` / `KEEL_APPROVE`: tools whose every call waits for approval (the flag itself is `keel worker`'s). */
export const APPROVE_SETTING = { flag: '--approve', env: 'KEEL_APPROVE' } as const;

/** A setting's `--help` line: its doc, and its default if it has one. */
export function settingHelp(s: ApprovalSetting): string {
  return s.default !== undefined ? `${s.doc} (default: ${s.default})` : s.doc;
}

/**
 * How each approval setting is spelled where it is given, for the texts that name them: `keel worker`'s flags
 * ({@link APPROVAL_FLAG_NAMES}) or the environment of `npm run worker` ({@link APPROVAL_ENV_NAMES}). `file` and `url`
 * are what follows a key setting in a hint (` <file>` after a flag, `=<file>` after a variable).
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

type Named = Omit<ApprovalSettingNames, 'approve' | 'unauthenticated' | 'file' | 'url'>;
const named = (name: (s: ApprovalSetting) => string): Named => ({
  jwks: name(APPROVAL_SETTINGS.jwks),
  jwksUrl: name(APPROVAL_SETTINGS.jwksUrl),
  hmacSecretFile: name(APPROVAL_SETTINGS.hmacSecretFile),
  issuer: name(APPROVAL_SETTINGS.issuer),
  audience: name(APPROVAL_SETTINGS.audience),
  maxTokenAge: name(APPROVAL_SETTINGS.maxTokenAge),
});

/** A flag without the placeholder of its value (`--approvals-jwks`). */
const flagName = (s: ApprovalSetting): string => s.flag.split(' ')[0];

/** The settings' names in texts: `keel worker`'s flags. */
export const APPROVAL_FLAG_NAMES: ApprovalSettingNames = {
  ...named(flagName),
  approve: `${APPROVE_SETTING.flag} `,
  unauthenticated: APPROVAL_SETTINGS.unauthenticated.flag,
  file: ' <file>',
  url: ' <url>',
};

/** The settings' names in texts: `npm run worker`'s variables. */
export const APPROVAL_ENV_NAMES: ApprovalSettingNames = {
  ...named((s) => s.env),
  approve: `${APPROVE_SETTING.env}=`,
  unauthenticated: `${APPROVAL_SETTINGS.unauthenticated.env}=${UNAUTHENTICATED_ENV_VALUE}`,
  file: '=<file>',
  url: '=<url>',
};
