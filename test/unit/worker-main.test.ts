/**
 * `npm run worker` (worker/main.ts, the Docker worker's entry): a Temporal it cannot reach is one line, no stack, exit 1;
 * so are approval settings from the environment that are missing (KEEL_APPROVE without anything saying who may approve)
 * or wrong, refused before connecting, naming the variables to set.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

const APPROVAL_ENV = [
  'KEEL_APPROVE',
  'KEEL_APPROVALS_JWKS_FILE',
  'KEEL_APPROVALS_JWKS_URL',
  'KEEL_APPROVALS_HMAC_SECRET_FILE',
  'KEEL_APPROVAL_HMAC_SECRET',
  'KEEL_APPROVALS_ISSUER',
  'KEEL_APPROVALS_AUDIENCE',
  'KEEL_APPROVALS_AUTHENTICATION',
];

/** worker/main.ts against an address nothing listens on, with `env` (and no approval setting of this shell). */
function runMain(env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const base: NodeJS.ProcessEnv = { ...process.env, TEMPORAL_ADDRESS: '127.0.0.1:1', KEEL_DEBUG: '' };
  for (const name of APPROVAL_ENV) delete base[name];
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'worker/main.ts'],
      { cwd: ROOT, env: { ...base, ...env }, timeout: 60_000 },
      (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? null) : 0, stdout, stderr }),
    );
  });
}

describe('worker/main.ts', () => {
  it('fails in one line that names the address and what to check', async () => {
    const r = await runMain({});
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    const lines = r.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^\[keel\] cannot start a worker against Temporal at 127\.0\.0\.1:1: .*Connection refused.*\. Check TEMPORAL_ADDRESS \(and that the server is up\)\.$/,
    );
  });

  it('KEEL_APPROVE without who may approve does not start: one line naming the variables', async () => {
    const r = await runMain({ KEEL_APPROVE: 'bash' });
    expect(r).toEqual({
      code: 1,
      stdout: '',
      stderr:
        '[keel] tools bash wait for approval, but nothing says who may approve: give KEEL_APPROVALS_JWKS_FILE=<file>, ' +
        'KEEL_APPROVALS_JWKS_URL=<url> or KEEL_APPROVALS_HMAC_SECRET_FILE=<file> to accept only signed decisions, or ' +
        'KEEL_APPROVALS_AUTHENTICATION=none to accept any approver name (development only)\n',
    });
  }, 60_000);

  it('a tools worker takes KEEL_APPROVE without a key source (the model worker verifies): it goes on to connect', async () => {
    const r = await runMain({
      KEEL_WORKER_ROLE: 'tools',
      KEEL_APPROVE: 'bash',
      KEEL_APPROVALS_HMAC_SECRET_FILE: '/nonexistent/keel-hmac', // not read: a tools worker decides no approval
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/^\[keel\] cannot start a worker against Temporal at 127\.0\.0\.1:1: /);
  }, 60_000);

  it('wrong approval settings are refused before connecting, each in one line', async () => {
    const cases: [Record<string, string>, string][] = [
      [
        { KEEL_APPROVE: 'bash,deploy' },
        'KEEL_APPROVE=deploy: no such tool on this worker (its tools: read, bash, edit, write, grep, find, ls)',
      ],
      [
        { KEEL_APPROVE: 'bash', KEEL_APPROVALS_AUTHENTICATION: 'jwt' },
        'KEEL_APPROVALS_AUTHENTICATION must be none (any approver name, development only) or unset; the keys of ' +
          'signed decisions come from KEEL_APPROVALS_JWKS_FILE, KEEL_APPROVALS_JWKS_URL or KEEL_APPROVALS_HMAC_SECRET_FILE',
      ],
      [
        { KEEL_APPROVE: 'bash', KEEL_APPROVALS_AUTHENTICATION: 'none', KEEL_APPROVALS_JWKS_URL: 'https://idp/jwks' },
        'KEEL_APPROVALS_AUTHENTICATION=none and KEEL_APPROVALS_JWKS_URL contradict each other; give one',
      ],
      [
        { KEEL_APPROVALS_ISSUER: 'https://idp' },
        'KEEL_APPROVALS_ISSUER and KEEL_APPROVALS_AUDIENCE need the keys: KEEL_APPROVALS_JWKS_FILE=<file>, ' +
          'KEEL_APPROVALS_JWKS_URL=<url> or KEEL_APPROVALS_HMAC_SECRET_FILE=<file>',
      ],
      [
        { KEEL_APPROVE: 'bash', KEEL_APPROVALS_HMAC_SECRET_FILE: '/nonexistent/keel-hmac' },
        "approvals.authentication.hmacSecretFile: cannot read /nonexistent/keel-hmac: ENOENT: no such file or directory, open '/nonexistent/keel-hmac'",
      ],
    ];
    for (const [env, line] of cases)
      expect(await runMain(env)).toEqual({ code: 1, stdout: '', stderr: `[keel] ${line}\n` });
  }, 300_000);
});
