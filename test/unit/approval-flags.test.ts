/**
 * `keel worker` / `keel dev` approvals flags (worker/approvals/flags.ts, README "Who may approve"): one key source,
 * the secret from a file or the environment (never argv), contradictions refused with exact texts, and the defaults —
 * `keel dev` unauthenticated when a tool asks for approval, `keel worker` refusing.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { approvalsFromFlags, HMAC_SECRET_ENV } from '../../worker/approvals/flags.js';

const gated = defineTool({
  name: 'gated',
  description: 'Needs approval.',
  approval: 'always',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [] }),
});
const plain = defineTool({
  name: 'plain',
  description: 'Needs none.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [] }),
});

const refused = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected a usage error');
};

describe('approvals flags', () => {
  afterEach(() => {
    delete process.env[HMAC_SECRET_ENV];
  });

  it('defaults: nothing asks for approval → no setting; keel dev → unauthenticated; keel worker → refused', () => {
    expect(approvalsFromFlags({}, [plain], false)).toBeUndefined();
    expect(approvalsFromFlags({}, [plain, gated], true)).toEqual({ authentication: 'none' });
    expect(refused(() => approvalsFromFlags({}, [gated], false))).toBe(
      'tools gated wait for approval, but nothing says who may approve: give --approvals-jwks <file>, ' +
        '--approvals-jwks-url <url> or --approvals-hmac-secret-file <file> to accept only signed decisions, or ' +
        '--approvals-unauthenticated to accept any approver name (development only)',
    );
  });

  it('one key source, with issuer and audience; the secret from the environment', () => {
    expect(
      approvalsFromFlags(
        { approvalsJwks: 'keys.json', approvalsIssuer: 'https://idp', approvalsAudience: 'ops' },
        [gated],
        false,
      ),
    ).toEqual({ authentication: { jwks: 'keys.json', issuer: 'https://idp', audience: 'ops' } });
    process.env[HMAC_SECRET_ENV] = 's'.repeat(32);
    expect(approvalsFromFlags({}, [gated], true)).toEqual({ authentication: { hmacSecret: 's'.repeat(32) } });
    // the file flag wins over the environment
    expect(approvalsFromFlags({ approvalsHmacSecretFile: 'secret' }, [gated], false)).toEqual({
      authentication: { hmacSecretFile: 'secret' },
    });
  });

  it('contradictions are refused', () => {
    expect(refused(() => approvalsFromFlags({ approvalsJwks: 'a', approvalsJwksUrl: 'http://b' }, [], false))).toBe(
      "give one of --approvals-jwks, --approvals-jwks-url: the approval tokens' keys",
    );
    expect(refused(() => approvalsFromFlags({ approvalsJwks: 'a', approvalsUnauthenticated: true }, [], false))).toBe(
      '--approvals-unauthenticated and --approvals-jwks contradict each other; give one',
    );
    expect(refused(() => approvalsFromFlags({ approvalsIssuer: 'https://idp' }, [gated], true))).toBe(
      '--approvals-issuer and --approvals-audience need the keys: --approvals-jwks <file>, --approvals-jwks-url <url> or --approvals-hmac-secret-file <file>',
    );
  });

  it('--approvals-max-token-age: seconds or a span, passed on; a bad one or one without keys is refused', () => {
    expect(approvalsFromFlags({ approvalsJwks: 'k.json', approvalsMaxTokenAge: '300' }, [gated], false)).toEqual({
      authentication: { jwks: 'k.json', maxTokenAge: 300 },
    });
    expect(approvalsFromFlags({ approvalsJwks: 'k.json', approvalsMaxTokenAge: '5m' }, [gated], false)).toEqual({
      authentication: { jwks: 'k.json', maxTokenAge: '5m' },
    });
    expect(
      refused(() => approvalsFromFlags({ approvalsJwks: 'k.json', approvalsMaxTokenAge: 'soon' }, [], false)),
    ).toBe('--approvals-max-token-age must be seconds or a span such as 90s, 15m, 1h; got "soon"');
    expect(refused(() => approvalsFromFlags({ approvalsMaxTokenAge: '5m' }, [gated], true))).toBe(
      '--approvals-max-token-age needs the keys: --approvals-jwks <file>, --approvals-jwks-url <url> or --approvals-hmac-secret-file <file>',
    );
  });
});
