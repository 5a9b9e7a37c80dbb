/**
 * Approvals from authenticated people (README "Who may approve", issue 23 item 2): on a worker with
 * `approvals.authentication`, a decision carries a token the `verifyApproval` local activity checks. A valid token for
 * this call runs it exactly once and the audit record names the verified subject, issuer and key id; an expired token,
 * one for another run, call, digest, verb or audience, a forged signature, a subject the policy refuses and an
 * unsigned decision are each refused with their own text and change nothing. HS256 and JWKS (RS256, ES256) alike.
 * `authentication: 'none'` is announced at start; a worker whose tools ask for approval and that was given no
 * `approvals` does not start.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inject } from 'vitest';
import type { AgentRunHandle } from '../../client/agent-client.js';
import { mintApprovalToken } from '../../client/approval-token.js';
import type { ApprovalRecord } from '../../common/updates.js';
import { createAgentWorker } from '../../worker/create-worker.js';
import { APPROVALS_UNAUTHENTICATED_NOTICE } from '../../worker/approvals/resolve.js';
import { steerSignal } from '../../workflows/definitions.js';
import { refusal, startKeel, strip, until, untilContinuedAsNew, workflowTaskFailures, type Keel } from './harness.js';
import { dangerTool, ranLog } from './approval-fixtures.js';

const { ran, note } = ranLog();
const danger = dangerTool(note);
const scripts = {
  auth: {
    rules: [
      { match: 'toolResult:', text: 'all done' },
      { match: 'steer-', text: 'saw the steer' },
      { toolCalls: [{ id: 'd-1', name: 'danger', arguments: { target: 'y' } }] },
    ],
  },
  // a provider that repeats call ids (local models, the scripted model): the same call twice, then the end
  twice: {
    replies: [
      { toolCalls: [{ id: 'd-1', name: 'danger', arguments: { target: 'y' } }] },
      { toolCalls: [{ id: 'd-1', name: 'danger', arguments: { target: 'y' } }] },
      { text: 'all done' },
    ],
  },
};

const SECRET = 'a-shared-secret-of-at-least-32-bytes!';
const ISSUER = 'https://idp.example.test';
const now = () => Math.floor(Date.now() / 1000);

/** The worker's policy: only `ops` may approve; `mallory` may do nothing; a tenant's runs only by its own people. */
const authorizeApproval = ({
  claims,
  metadata,
}: {
  claims: Record<string, unknown>;
  metadata: Record<string, unknown>;
}) =>
  claims.sub === 'mallory'
    ? false
    : metadata.tenant !== undefined && claims.tenant !== metadata.tenant
      ? `${String(claims.sub)} is not in tenant ${String(metadata.tenant)}`
      : claims.role === 'ops' || 'only ops may decide tool calls';

const timeless = ({ requestedAt: _r, decidedAt: _d, ...rest }: ApprovalRecord) => rest;

/** The nonce of the call `d-1` pending now (`keel_request`). */
async function requestOf(h: AgentRunHandle): Promise<string> {
  return (await h.state()).pendingApprovals.find((p) => p.toolCallId === 'd-1')?.requestId ?? 'none pending';
}

async function pendingOf(h: AgentRunHandle) {
  await until(async () => (await h.state()).pendingApprovals.length === 1, 20_000, 'pending approval');
  return (await h.state()).pendingApprovals;
}

describe('approvals with HMAC (HS256) tokens', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      scripts,
      tools: [danger],
      approvals: { authentication: { hmacSecret: SECRET, issuer: ISSUER }, authorizeApproval },
    });
  });
  afterAll(() => keel?.stop());

  const mint = async (
    h: AgentRunHandle,
    argsDigest: string,
    o: Partial<Parameters<typeof mintApprovalToken>[0]> = {},
  ) =>
    mintApprovalToken({
      requestId: await requestOf(h),
      secret: SECRET,
      subject: 'alice',
      issuer: ISSUER,
      keyId: 'hmac-1',
      workflowId: h.workflowId,
      toolCallId: 'd-1',
      argsDigest,
      decision: 'approve',
      claims: { role: 'ops' },
      ...o,
    });

  it('every bad or unsigned decision is refused with its own text and changes nothing; a valid token runs the call once', async () => {
    const h = await keel.start({ model: 'scripted/auth', prompt: 'go', tools: ['danger'] });
    const before = await pendingOf(h);
    const [{ argsDigest }] = before;
    const approve = async (token?: string) =>
      refusal(h.approve({ toolCallId: 'd-1', argsDigest, ...(token ? { token } : { approver: 'alice' }) }));
    const expiredAt = now() - 60;
    const claims = {
      keel_run: h.workflowId,
      keel_tool_call: 'd-1',
      keel_args_digest: argsDigest,
      keel_decision: 'approve',
      keel_request: before[0].requestId,
      role: 'ops',
    };
    const signed = (sub: string, iat: number | undefined, exp: number) => {
      const jwt = new SignJWT(claims)
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(sub)
        .setIssuer(ISSUER)
        .setAudience('keel')
        .setExpirationTime(exp);
      return (iat === undefined ? jwt : jwt.setIssuedAt(iat)).sign(new TextEncoder().encode(SECRET));
    };
    const expired = await signed('alice', expiredAt - 60, expiredAt);
    const tenYears = 10 * 365 * 86400;
    const [longAgo, future] = [now() - 3600, now() + 600];
    const iso = (t: number) => new Date(t * 1000).toISOString();
    const cases: [string, string | undefined, string][] = [
      [
        'unsigned',
        undefined,
        'approve: this run accepts only signed decisions: pass token, a JWT bound to this run, tool call and argsDigest (README "Who may approve")',
      ],
      [
        'expired',
        expired,
        `Cannot approve tool call d-1: the token expired at ${new Date(expiredAt * 1000).toISOString()}`,
      ],
      [
        'ten years to live',
        await signed('alice', now(), now() + tenYears),
        `Cannot approve tool call d-1: the token lives ${tenYears} s (exp − iat); this worker accepts at most 900 s (approvals maxTokenAge)`,
      ],
      [
        'issued long ago',
        await signed('alice', longAgo, now() + 60),
        `Cannot approve tool call d-1: the token was issued at ${iso(longAgo)}, more than 900 s ago (approvals maxTokenAge)`,
      ],
      [
        'issued in the future',
        await signed('alice', future, future + 300),
        `Cannot approve tool call d-1: the token's iat ${iso(future)} is in the future`,
      ],
      [
        'no iat',
        await signed('alice', undefined, now() + 60),
        'Cannot approve tool call d-1: the token has no iat claim',
      ],
      [
        'an empty sub',
        await signed('', now(), now() + 60),
        "Cannot approve tool call d-1: the token's sub is empty: it must name who decides",
      ],
      [
        'the reserved sub keel',
        await signed('keel', now(), now() + 60),
        `Cannot approve tool call d-1: the token's sub "keel" is reserved for the run's own decisions`,
      ],
      [
        'another request',
        await mint(h, argsDigest, { requestId: 'an-old-request' }),
        `Cannot approve tool call d-1: the token's keel_request is "an-old-request", not "${before[0].requestId}"`,
      ],
      [
        'another call',
        await mint(h, argsDigest, { toolCallId: 'd-2' }),
        `Cannot approve tool call d-1: the token's keel_tool_call is "d-2", not "d-1"`,
      ],
      [
        'another digest',
        await mint(h, 'f'.repeat(64)),
        `Cannot approve tool call d-1: the token's keel_args_digest is "${'f'.repeat(64)}", not "${argsDigest}"`,
      ],
      [
        'another run',
        await mint(h, argsDigest, { workflowId: 'other-run' }),
        `Cannot approve tool call d-1: the token's keel_run is "other-run", not "${h.workflowId}"`,
      ],
      [
        'a deny token',
        await mint(h, argsDigest, { decision: 'deny' }),
        `Cannot approve tool call d-1: the token's keel_decision is "deny", not "approve"`,
      ],
      [
        'forged (another secret)',
        await mint(h, argsDigest, { secret: 'another-secret-that-is-32-bytes-long!!' }),
        "Cannot approve tool call d-1: the token's signature does not verify with the issuer's keys",
      ],
      [
        'another audience',
        await mint(h, argsDigest, { audience: 'billing' }),
        "Cannot approve tool call d-1: the token's audience is not keel",
      ],
      [
        'another issuer',
        await mint(h, argsDigest, { issuer: 'https://evil.example.test' }),
        `Cannot approve tool call d-1: the token's issuer is not ${ISSUER}`,
      ],
      [
        'the policy says no (a reason)',
        await mint(h, argsDigest, { claims: { role: 'intern' } }),
        'Cannot approve tool call d-1: only ops may decide tool calls',
      ],
      [
        'the policy says no (false)',
        await mint(h, argsDigest, { subject: 'mallory' }),
        'Cannot approve tool call d-1: the approval policy does not allow mallory to approve danger',
      ],
    ];
    const got: Record<string, string> = {};
    for (const [what, token] of cases) got[what] = await approve(token);
    expect(got).toEqual(Object.fromEntries(cases.map(([what, , text]) => [what, text])));
    const st = await h.state();
    expect([st.status, st.pendingApprovals, st.approvals, ran.get(h.workflowId)]).toEqual([
      'awaiting-approval',
      before,
      [],
      undefined,
    ]);

    const record = await h.approve({ toolCallId: 'd-1', argsDigest, token: await mint(h, argsDigest) });
    const audit = {
      toolCallId: 'd-1',
      toolName: 'danger',
      decision: 'approved',
      approver: 'alice',
      argsDigest,
      subject: 'alice',
      issuer: ISSUER,
      keyId: 'hmac-1',
    };
    expect(timeless(record)).toEqual(audit);
    const r = await h.result();
    expect(ran.get(h.workflowId)).toEqual(['danger y']);
    expect(timeless((await h.state()).approvals[0])).toEqual(audit);
    const toolResult = strip(r.newMessages)[2] as { details: { approval: ApprovalRecord } };
    expect(timeless(toolResult.details.approval)).toEqual(audit);
    // the token is in history only as the input of an accepted Update (the verification is a local activity)
    const { events } = await h.workflow.fetchHistory();
    const withToken = (events ?? []).filter(hasToken);
    expect(withToken.length).toBeGreaterThan(0);
    expect(withToken.filter((e) => !e.workflowExecutionUpdateAcceptedEventAttributes)).toEqual([]);
  });

  it('two valid decisions at once: one wins, the other is told the call was already decided; the call runs once', async () => {
    const h = await keel.start({ model: 'scripted/auth', prompt: 'go', tools: ['danger'] });
    const [{ argsDigest }] = await pendingOf(h);
    const [a, b] = await Promise.allSettled([
      h.approve({ toolCallId: 'd-1', argsDigest, token: await mint(h, argsDigest, { subject: 'alice' }) }),
      h.approve({ toolCallId: 'd-1', argsDigest, token: await mint(h, argsDigest, { subject: 'bob' }) }),
    ]);
    const fulfilled = [a, b].filter((x) => x.status === 'fulfilled');
    const rejected = [a, b].filter((x) => x.status === 'rejected');
    expect([fulfilled.length, rejected.length]).toEqual([1, 1]);
    const winner = (fulfilled[0] as PromiseFulfilledResult<ApprovalRecord>).value.approver;
    expect((rejected[0] as PromiseRejectedResult).reason).toMatchObject({
      name: 'UpdateRejectedError',
      message: `Tool call d-1 was already approved by ${winner}`,
    });
    await h.result();
    expect(ran.get(h.workflowId)).toEqual(['danger y']);
  });

  it('a token decides one request: the same call id and arguments asked again need a new token (issue 33 item 8)', async () => {
    const h = await keel.start({ model: 'scripted/twice', prompt: 'go', tools: ['danger'] });
    const [first] = await pendingOf(h);
    const token = await mint(h, first.argsDigest);
    await h.approve({ toolCallId: 'd-1', argsDigest: first.argsDigest, token });
    await until(
      async () => {
        const now = (await h.state()).pendingApprovals;
        return now.length === 1 && now[0].requestId !== first.requestId;
      },
      20_000,
      'the second request',
    );
    const [second] = (await h.state()).pendingApprovals;
    expect([second.toolCallId, second.argsDigest, second.requestId === first.requestId]).toEqual([
      'd-1',
      first.argsDigest,
      false,
    ]);
    expect(await refusal(h.approve({ toolCallId: 'd-1', argsDigest: first.argsDigest, token }))).toBe(
      `Cannot approve tool call d-1: the token's keel_request is "${first.requestId}", not "${second.requestId}"`,
    );
    expect(ran.get(h.workflowId)).toEqual(['danger y']);
    await h.approve({ toolCallId: 'd-1', argsDigest: first.argsDigest, token: await mint(h, first.argsDigest) });
    expect((await h.result()).status).toBe('completed');
    expect(ran.get(h.workflowId)).toEqual(['danger y', 'danger y']);
  });

  it('continue-as-new while a call waits: the new run still takes signed decisions only', async () => {
    const h = await keel.start({
      model: 'scripted/auth',
      prompt: 'go',
      tools: ['danger'],
      continueAsNewAfterBytes: 65_536,
    });
    const before = await pendingOf(h);
    const [{ argsDigest }] = before;
    await h.workflow.signal(steerSignal, `steer-${'x'.repeat(70_000)}`);
    await untilContinuedAsNew(h);
    expect((await h.state()).pendingApprovals).toEqual(before);
    expect(await refusal(h.approve({ toolCallId: 'd-1', argsDigest, approver: 'alice' }))).toBe(
      'approve: this run accepts only signed decisions: pass token, a JWT bound to this run, tool call and argsDigest (README "Who may approve")',
    );
    const record = await h.approve({ toolCallId: 'd-1', argsDigest, token: await mint(h, argsDigest) });
    expect(record.subject).toBe('alice');
    expect((await h.result()).status).toBe('completed');
    expect(ran.get(h.workflowId)).toEqual(['danger y']);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('a signed deny: the call gets the denial with the verified subject; the policy sees the run metadata', async () => {
    const h = await keel.start({
      model: 'scripted/auth',
      prompt: 'go',
      tools: ['danger'],
      metadata: { tenant: 'acme' },
    });
    const [{ argsDigest }] = await pendingOf(h);
    const deny = (claims: Record<string, unknown>) =>
      mint(h, argsDigest, { decision: 'deny', subject: 'carol', claims: { role: 'ops', ...claims } });
    expect(
      await refusal(h.deny({ toolCallId: 'd-1', argsDigest, reason: 'no', token: await deny({ tenant: 'other' }) })),
    ).toBe('Cannot deny tool call d-1: carol is not in tenant acme');
    const record = await h.deny({
      toolCallId: 'd-1',
      argsDigest,
      reason: 'not today',
      token: await deny({ tenant: 'acme' }),
    });
    expect([record.decision, record.approver, record.subject]).toEqual(['denied', 'carol', 'carol']);
    const r = await h.result();
    expect(strip(r.newMessages)[2]).toMatchObject({
      content: [{ type: 'text', text: 'Tool danger was denied by carol: not today' }],
      isError: true,
    });
    expect(ran.get(h.workflowId)).toBeUndefined();
  });
});

/** Any event whose attributes hold a compact JWS (three base64url parts): only the Update's input may. */
function hasToken(e: unknown): boolean {
  const jws = /eyJ[\w-]+\.eyJ[\w-]+\.[\w-]+/;
  const walk = (v: unknown): boolean =>
    v instanceof Uint8Array
      ? jws.test(Buffer.from(v).toString('utf8'))
      : typeof v === 'string'
        ? jws.test(v)
        : v !== null && typeof v === 'object' && Object.values(v).some(walk);
  return walk(e);
}

describe('approvals with a JWKS (RS256, ES256)', () => {
  let keel: Keel;
  let rsa: CryptoKey;
  let ec: CryptoKey;
  let forger: CryptoKey;
  beforeAll(async () => {
    const r = await generateKeyPair('RS256');
    const e = await generateKeyPair('ES256');
    rsa = r.privateKey;
    ec = e.privateKey;
    forger = (await generateKeyPair('ES256')).privateKey;
    const jwk = async (k: CryptoKey, kid: string, alg: string): Promise<JWK> => ({
      ...(await exportJWK(k)),
      kid,
      alg,
      use: 'sig',
    });
    const file = join(mkdtempSync(join(tmpdir(), 'keel-jwks-')), 'jwks.json');
    writeFileSync(
      file,
      JSON.stringify({ keys: [await jwk(r.publicKey, 'rsa-1', 'RS256'), await jwk(e.publicKey, 'ec-1', 'ES256')] }),
    );
    keel = await startKeel({
      scripts,
      tools: [danger],
      approvals: { authentication: { jwks: file, audience: 'keel-approvals' } },
    });
  });
  afterAll(() => keel?.stop());

  const sign = async (h: AgentRunHandle, argsDigest: string, key: CryptoKey, alg: string, kid: string) =>
    new SignJWT({
      keel_run: h.workflowId,
      keel_tool_call: 'd-1',
      keel_args_digest: argsDigest,
      keel_decision: 'approve',
      keel_request: await requestOf(h),
    })
      .setProtectedHeader({ alg, kid })
      .setIssuedAt()
      .setSubject(`${kid}-person`)
      .setIssuer('https://login.example.test')
      .setAudience('keel-approvals')
      .setExpirationTime('5m')
      .sign(key);

  for (const [alg, kid] of [
    ['RS256', 'rsa-1'],
    ['ES256', 'ec-1'],
  ] as const) {
    it(`a token signed ${alg} approves once and names subject, issuer and kid; a forged one is refused`, async () => {
      const h = await keel.start({ model: 'scripted/auth', prompt: 'go', tools: ['danger'] });
      const before = await pendingOf(h);
      const [{ argsDigest }] = before;
      expect(
        await refusal(
          h.approve({ toolCallId: 'd-1', argsDigest, token: await sign(h, argsDigest, forger, 'ES256', kid) }),
        ),
      ).toBe(
        alg === 'ES256'
          ? "Cannot approve tool call d-1: the token's signature does not verify with the issuer's keys"
          : "Cannot approve tool call d-1: no key of the issuer's key set matches the token",
      );
      expect([(await h.state()).pendingApprovals, ran.get(h.workflowId)]).toEqual([before, undefined]);
      const key = alg === 'RS256' ? rsa : ec;
      const record = await h.approve({
        toolCallId: 'd-1',
        argsDigest,
        token: await sign(h, argsDigest, key, alg, kid),
      });
      expect([record.approver, record.subject, record.issuer, record.keyId]).toEqual([
        `${kid}-person`,
        `${kid}-person`,
        'https://login.example.test',
        kid,
      ]);
      await h.result();
      expect(ran.get(h.workflowId)).toEqual(['danger y']);
    });
  }
});

describe('approvals with a JWKS URL', () => {
  let keel: Keel;
  let server: Server;
  let key: CryptoKey;
  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    key = pair.privateKey;
    const jwks = JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'url-1', alg: 'ES256' }] });
    server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(jwks));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    keel = await startKeel({
      scripts,
      tools: [danger],
      approvals: { authentication: { jwksUrl: `http://127.0.0.1:${port}/jwks.json` } },
    });
  });
  afterAll(async () => {
    await keel?.stop();
    server?.close();
  });

  it('a token signed with a key the issuer publishes approves', async () => {
    const h = await keel.start({ model: 'scripted/auth', prompt: 'go', tools: ['danger'] });
    const [{ argsDigest }] = await pendingOf(h);
    const token = await new SignJWT({
      keel_run: h.workflowId,
      keel_tool_call: 'd-1',
      keel_args_digest: argsDigest,
      keel_decision: 'approve',
      keel_request: await requestOf(h),
    })
      .setProtectedHeader({ alg: 'ES256', kid: 'url-1' })
      .setIssuedAt()
      .setSubject('dana')
      .setAudience('keel')
      .setExpirationTime('5m')
      .sign(key);
    const record = await h.approve({ toolCallId: 'd-1', argsDigest, token });
    expect([record.approver, record.subject, record.issuer, record.keyId]).toEqual([
      'dana',
      'dana',
      undefined,
      'url-1',
    ]);
    await h.result();
    expect(ran.get(h.workflowId)).toEqual(['danger y']);
  });
});

describe('the approvals setting at worker start', () => {
  it("authentication: 'none' is announced at start, and free-text approvers are accepted", async () => {
    const write = vi.spyOn(process.stderr, 'write');
    const keel = await startKeel({ scripts, tools: [danger], approvals: { authentication: 'none' } });
    try {
      expect(write.mock.calls.map(([text]) => String(text))).toContain(APPROVALS_UNAUTHENTICATED_NOTICE);
      expect(APPROVALS_UNAUTHENTICATED_NOTICE).toBe(
        '[keel] approvals: authentication none: approve/deny take any approver name, unverified (development only; README "Who may approve")\n',
      );
      const h = await keel.start({ model: 'scripted/auth', prompt: 'go', tools: ['danger'] });
      const [{ argsDigest }] = await pendingOf(h);
      // a token is not verified here: it proves nothing, so the decision still needs a name
      const token = await mintApprovalToken({
        secret: SECRET,
        subject: 'alice',
        requestId: await requestOf(h),
        workflowId: h.workflowId,
        toolCallId: 'd-1',
        argsDigest,
        decision: 'approve',
      });
      expect(await refusal(h.approve({ toolCallId: 'd-1', argsDigest, token }))).toBe(
        'approve: approver must be a non-empty name',
      );
      expect((await h.approve({ toolCallId: 'd-1', argsDigest, approver: 'anyone' })).approver).toBe('anyone');
      await h.result();
    } finally {
      write.mockRestore();
      await keel.stop();
    }
  });

  it('a worker whose tools ask for approval and that says nothing about approvals does not start', async () => {
    await expect(
      createAgentWorker({ address: inject('temporalAddress'), taskQueue: `t-${randomUUID()}`, tools: [danger] }),
    ).rejects.toThrow(
      'Tool calls on this worker can wait for approval (danger), but nothing says who may approve: pass approvals: ' +
        '{ authentication: { jwks | jwksUrl | hmacSecret | hmacSecretFile } } to accept only signed decisions, or ' +
        'approvals: { authentication: \'none\' } to accept any approver name (development only). README "Who may approve".',
    );
  });
});
