/**
 * `keel codec-server` / `createCodecServer` (issue 23 item 1, README "Reading encrypted runs: the codec server") over
 * real HTTP against a real sealed run: a payload of the run's history decodes through POST /decode; the Web UI's CORS
 * preflight is answered for its origin and refused for another; a token is enforced; the `temporal` CLI flags the
 * command prints, pasted into a shell, make `temporal workflow show` print the decoded prompt.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { Payload } from '@temporalio/common';
import { request as httpRequest } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { CodecServerConfigError, createCodecServer, type CodecServer } from '../../client/codec-server.js';
import { EncryptionCodec, newKeyRingJson, parseKeyRing, type KeyRing } from '../../node-common/encryption.js';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { spawnUntil, stopChild } from './cli-child.js';
import { startKeel, type Keel } from './harness.js';

const PROMPT = 'Summarise the orchid-7741 contract for the board';
const UI_ORIGIN = 'http://localhost:8233';
const TOKEN = 'codec-test-token-3f9a-0123456789abcdef';

type JsonPayload = { metadata: Record<string, string>; data: string };
const toJson = (p: Payload): JsonPayload => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? []).toString('base64'),
});
const text = (b64: string) => Buffer.from(b64, 'base64').toString();

let ring: KeyRing;
let keel: Keel;
let sealed: AgentClient;
let raw: Client;
let workflowId: string;
/** The run's input payload as Temporal stores it (sealed). */
let storedInput: Payload;
let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'keel-codec-'));
  const keys = newKeyRingJson('k-test');
  writeFileSync(join(dir, 'keys.json'), keys, { mode: 0o600 });
  ring = parseKeyRing(keys, 'test');
  keel = await startKeel({
    scripts: { sealed: { rules: [{ text: 'Sealed reply.' }] } },
    encryption: { keyRing: ring },
  });
  const connection = await Connection.connect({ address: keel.address });
  sealed = new AgentClient(
    new Client({ connection, dataConverter: { payloadCodecs: [new EncryptionCodec(ring)] } }),
    keel.taskQueue,
  );
  raw = new Client({ connection });
  const run = await sealed.start({ model: 'scripted/sealed', prompt: PROMPT });
  workflowId = run.workflowId;
  expect((await run.result()).status).toBe('completed');
  const history = await raw.workflow.getHandle(workflowId).fetchHistory();
  storedInput = history.events![0]!.workflowExecutionStartedEventAttributes!.input!.payloads![0]! as Payload;
}, 120_000);

afterAll(async () => {
  await keel?.stop();
  await raw?.connection.close();
});

describe('createCodecServer over HTTP', () => {
  let server: CodecServer;
  beforeAll(async () => {
    server = await createCodecServer({ keyRing: ring, port: 0, origins: [UI_ORIGIN], token: TOKEN });
  });
  afterAll(() => server?.close());

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Namespace': 'default', ...headers },
      body: JSON.stringify(body),
    });

  it("decodes the sealed input payload of a real run's history, and encode/decode round-trips", async () => {
    expect(text(toJson(storedInput).metadata.encoding!)).toBe('binary/encrypted');
    expect(Buffer.from(storedInput.data!).toString('latin1')).not.toContain('orchid');
    const res = await post('/decode', { payloads: [toJson(storedInput)] }, { Authorization: `Bearer ${TOKEN}` });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json');
    const { payloads } = (await res.json()) as { payloads: JsonPayload[] };
    expect(payloads).toHaveLength(1);
    expect(text(payloads[0]!.metadata.encoding!)).toBe('json/plain');
    expect(JSON.parse(text(payloads[0]!.data))).toMatchObject({ model: 'scripted/sealed', prompt: PROMPT });

    const clear = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: payloads[0]!.data };
    const encoded = await post('/encode', { payloads: [clear] }, { Authorization: `Bearer ${TOKEN}` });
    const sealedAgain = ((await encoded.json()) as { payloads: JsonPayload[] }).payloads;
    expect(text(sealedAgain[0]!.metadata['encryption-key-id']!)).toBe('k-test');
    expect(text(sealedAgain[0]!.data)).not.toContain('orchid');
    const back = await post('/decode', { payloads: sealedAgain }, { Authorization: `Bearer ${TOKEN}` });
    expect(((await back.json()) as { payloads: JsonPayload[] }).payloads).toEqual([clear]);
  });

  it("answers the Web UI's CORS preflight from its origin and refuses another origin", async () => {
    const preflight = (origin: string) =>
      fetch(`${server.url}/decode`, {
        method: 'OPTIONS',
        headers: {
          Origin: origin,
          'Access-Control-Request-Method': 'POST',
          'Access-Control-Request-Headers': 'authorization,content-type,x-namespace',
        },
      });
    const ok = await preflight(UI_ORIGIN);
    expect(ok.status).toBe(204);
    expect(Object.fromEntries([...ok.headers].filter(([k]) => k.startsWith('access-control-')))).toEqual({
      'access-control-allow-origin': UI_ORIGIN,
      'access-control-allow-credentials': 'true',
      'access-control-allow-methods': 'POST, OPTIONS',
      'access-control-allow-headers': 'Authorization, Content-Type, X-Namespace',
      'access-control-max-age': '600',
    });
    const other = await preflight('http://evil.example');
    expect(other.status).toBe(403);
    expect(other.headers.get('access-control-allow-origin')).toBeNull();
    expect(await other.text()).toBe(
      'origin http://evil.example is not allowed; start the codec server with --origin http://evil.example to let that Web UI call it\n',
    );
    // the POST itself from another origin is refused too, token or not
    const post403 = await post(
      '/decode',
      { payloads: [toJson(storedInput)] },
      { Authorization: `Bearer ${TOKEN}`, Origin: 'http://evil.example' },
    );
    expect(post403.status).toBe(403);
  });

  it('answers 401 without the bearer token or with a wrong one', async () => {
    for (const headers of [{}, { Authorization: 'Bearer wrong' }, { Authorization: TOKEN }] as Record<
      string,
      string
    >[]) {
      const res = await post('/decode', { payloads: [toJson(storedInput)] }, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer');
      expect(await res.text()).toBe(
        'missing or wrong bearer token: send Authorization: Bearer <the codec server token>\n',
      );
    }
  });

  it('says what is wrong with a bad body and a payload of an unknown key', async () => {
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const bad = await post('/decode', { nope: 1 }, auth);
    expect([bad.status, await bad.text()]).toEqual([400, 'bad request: the body must be {"payloads": [...]}\n']);
    const other = new EncryptionCodec(parseKeyRing(newKeyRingJson('k-other'), 'other'));
    const foreign = await post('/decode', { payloads: [toJson(other.seal(storedInput))] }, auth);
    expect([foreign.status, await foreign.text()]).toEqual([
      422,
      'payload encrypted with key "k-other", which is not in this key ring (k-test): add that key to the key file ($KEEL_ENCRYPTION_KEYS_FILE) under its id\n',
    ]);
  });

  it('refuses to start without authentication, with a short token, or off loopback without TLS (issue 33 item 9)', async () => {
    const refused = (o: Partial<Parameters<typeof createCodecServer>[0]>) =>
      createCodecServer({ keyRing: ring, port: 0, ...o }).then(
        async (s) => {
          await s.close();
          return 'started';
        },
        (e: Error) => `${e.name}: ${e.message}`,
      );
    expect({
      loopbackNoToken: await refused({}),
      shortToken: await refused({ token: 'x' }),
      offLoopbackPlain: await refused({ host: '0.0.0.0', token: TOKEN }),
      offLoopbackNoAuth: await refused({ host: '0.0.0.0', insecureNoAuth: true, tls: { certFile: 'c', keyFile: 'k' } }),
      both: await refused({ token: TOKEN, insecureNoAuth: true }),
      explicitOptOut: await refused({ insecureNoAuth: true }),
    }).toEqual({
      loopbackNoToken:
        'CodecServerConfigError: refusing to serve decryption without authentication: any process that reaches 127.0.0.1 ' +
        '(a local one, a tool with network host) could read every run. Give a token of at least 32 characters ' +
        '(--token-file <file>, or $KEEL_CODEC_SERVER_TOKEN) or JWT verification (--jwks <file> or --jwks-url <url>), or ' +
        '--insecure-no-auth on a loopback address (development only)',
      shortToken:
        'CodecServerConfigError: the codec server token has 1 characters; give one of at least 32 (e.g. openssl rand -hex 32 > codec.token)',
      offLoopbackPlain:
        'CodecServerConfigError: refusing to serve decryption on 0.0.0.0 over plain HTTP: the token and every decoded ' +
        'payload would cross the network in clear. Give --tls-cert <file> and --tls-key <file>, or listen on 127.0.0.1',
      offLoopbackNoAuth:
        'CodecServerConfigError: --insecure-no-auth only on a loopback address, not 0.0.0.0: give a token or JWT verification',
      both: 'CodecServerConfigError: give one of a token, --insecure-no-auth; they contradict each other',
      explicitOptOut: 'started',
    });
    expect(CodecServerConfigError.name).toBe('CodecServerConfigError');
  });
});

describe('createCodecServer: JWTs per namespace, --decode-only, limits (issue 33 item 9)', () => {
  let server: CodecServer;
  let key: CryptoKey;
  beforeAll(async () => {
    const pair = await generateKeyPair('ES256');
    key = pair.privateKey;
    const jwks = join(dir, 'codec-jwks.json');
    writeFileSync(
      jwks,
      JSON.stringify({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'ui-1', alg: 'ES256' }] }),
    );
    server = await createCodecServer({
      keyRing: ring,
      port: 0,
      jwt: { jwks, issuer: 'https://idp.test', audience: 'temporal-ui', namespaceClaim: 'namespaces' },
      namespaces: ['default', 'team-a'],
      decodeOnly: true,
      maxConcurrent: 2,
      maxBodyBytes: 1024 * 1024,
    });
  });
  afterAll(() => server?.close());

  const jwt = (claims: Record<string, unknown>, signer: CryptoKey = key) =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: 'ES256', kid: 'ui-1' })
      .setSubject('alice')
      .setIssuer('https://idp.test')
      .setAudience('temporal-ui')
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(signer);
  const call = async (
    path: string,
    namespace: string,
    token: string,
    body: unknown = { payloads: [toJson(storedInput)] },
  ) => {
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Namespace': namespace, Authorization: `Bearer ${token}` },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    return [res.status, res.status === 200 ? 'ok' : await res.text()];
  };

  it('a JWT naming the namespace decodes; another namespace, a forged token or /encode are refused with their texts', async () => {
    const alice = await jwt({ namespaces: ['default'] });
    const forger = (await generateKeyPair('ES256')).privateKey;
    expect({
      decode: await call('/decode', 'default', alice),
      otherNamespace: await call('/decode', 'team-a', alice),
      notServed: await call('/decode', 'team-b', await jwt({ namespaces: ['team-b'] })),
      forged: await call('/decode', 'default', await jwt({ namespaces: ['default'] }, forger)),
      staticToken: await call('/decode', 'default', TOKEN),
      encode: await call('/encode', 'default', alice),
    }).toEqual({
      decode: [200, 'ok'],
      otherNamespace: [403, "the token's namespaces claim does not name namespace team-a\n"],
      notServed: [403, 'namespace team-b is not served here (this codec server serves default, team-a)\n'],
      forged: [401, 'the bearer token is not accepted: signature verification failed\n'],
      staticToken: [401, 'the bearer token is not accepted: Invalid Compact JWS\n'],
      encode: [403, 'this codec server only decodes (--decode-only): /encode is off\n'],
    });
  });

  it('a body over the limit gets 413 before it is read; requests beyond maxConcurrent get 503', async () => {
    const alice = await jwt({ namespaces: ['default'] });
    expect(await call('/decode', 'default', alice, 'x'.repeat(1024 * 1024 + 1))).toEqual([
      413,
      'request body too large: this codec server takes at most 1 MiB (1048576 bytes)\n',
    ]);
    // two uploads that never finish hold both slots; a third request is told to come back
    const { port } = new URL(server.url);
    const held = [0, 1].map(() => {
      const req = httpRequest({
        host: '127.0.0.1',
        port: Number(port),
        path: '/decode',
        method: 'POST',
        headers: { 'Content-Length': '1000', 'X-Namespace': 'default', Authorization: `Bearer ${alice}` },
      });
      req.on('error', () => undefined);
      req.write('{"payloads":');
      return req;
    });
    try {
      await vi.waitFor(
        async () =>
          expect(await call('/decode', 'default', alice)).toEqual([
            503,
            'busy: 2 requests are being served; retry in a moment\n',
          ]),
        { timeout: 10_000, interval: 50 },
      );
    } finally {
      for (const r of held) r.destroy();
    }
    await vi.waitFor(async () => expect(await call('/decode', 'default', alice)).toEqual([200, 'ok']), {
      timeout: 10_000,
      interval: 50,
    });
  });
});

describe('keel codec-server with the temporal CLI', () => {
  it('prints the flags that, pasted, make `temporal workflow show` print the decoded prompt', async () => {
    writeFileSync(join(dir, 'token'), `${TOKEN}\n`, { mode: 0o600 });
    const env = {
      ...process.env,
      KEEL_ENCRYPTION_KEYS: '',
      KEEL_ENCRYPTION_KEYS_FILE: '',
      KEEL_CODEC_SERVER_TOKEN: '',
    };
    const { child, output } = await spawnUntil(
      [
        'codec-server',
        '--encryption-keys',
        join(dir, 'keys.json'),
        '--listen',
        '127.0.0.1:0',
        '--token-file',
        join(dir, 'token'),
      ],
      ' to temporal workflow show',
      { env, cwd: dir },
    );
    try {
      const flags = /Temporal CLI: add (.+) to temporal workflow show/.exec(output.text)![1]!;
      expect(flags).toMatch(
        new RegExp(`^--codec-endpoint http://127\\.0\\.0\\.1:\\d+ --codec-auth "Bearer \\$\\(cat ${dir}/token\\)"$`),
      );
      expect(output.text).not.toContain(TOKEN);
      const temporal = await ensureTemporalCli();
      const show = (extra: string) =>
        execFileSync(
          'sh',
          [
            '-c',
            `"${temporal}" workflow show --address ${keel.address} --workflow-id ${workflowId} --detailed ${extra}`,
          ],
          { encoding: 'utf8', env: { ...env, NO_COLOR: '1' } },
        );
      expect(show(flags)).toContain(PROMPT);
      expect(show('')).not.toContain(PROMPT); // without the codec server: ciphertext
    } finally {
      await stopChild(child, 'SIGINT');
    }
  }, 60_000);
});
