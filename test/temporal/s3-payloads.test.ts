/**
 * Large payloads in S3 (README "Large transcripts"): the SDK's S3 driver against a real S3-compatible server, moto in
 * server mode, provisioned into a cached venv by scripts/moto-server.mjs (skipped, with the reason, when it cannot be).
 * A run whose 2.5 MB tool result, continue-as-new input and result go to the bucket: history holds references only;
 * the result and `allMessages()` read back through the client, and `keel transcript` reads them through S3 selected by
 * the environment (`KEEL_PAYLOAD_S3_BUCKET`, the standard `AWS_*` variables).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import {
  CreateBucketCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  S3Client,
  type _Object,
} from '@aws-sdk/client-s3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { PayloadStoreMissingError } from '../../node-common/payload-storage.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { MOTO_VERSION, startMotoServer } from '../../scripts/moto-server.mjs';
import type { Message } from '../../common/messages.js';
import { historyText, startKeel, type Keel } from './harness.js';

const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));
const BUCKET = 'keel-payloads';
const BIG = 2.5 * 1024 * 1024;
const PAD = 100 * 1024;
const CREDENTIALS = { accessKeyId: 'keel-test', secretAccessKey: 'keel-test-secret' };

const big = defineTool({
  name: 'big',
  description: 'Returns 2.5 MB of text.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'big:'.padEnd(BIG, 'b') }] }),
});
const pad = defineTool({
  name: 'pad',
  description: 'Returns 100 KB of text.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'pad:'.padEnd(PAD, 'p') }] }),
});

let moto: { endpoint: string; stop: () => Promise<void> } | undefined;
let unavailable = '';
let s3: S3Client;
let keel: Keel | undefined;

beforeAll(async () => {
  try {
    moto = await startMotoServer({ log: (line) => console.log(line) });
  } catch (err) {
    unavailable = err instanceof Error ? err.message : String(err);
    return;
  }
  s3 = new S3Client({ endpoint: moto.endpoint, region: 'us-east-1', forcePathStyle: true, credentials: CREDENTIALS });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  const rules = [
    { match: 'toolResult:pad', text: 'all done' },
    { match: 'toolResult:big', toolCalls: [{ name: 'pad', arguments: {} }] },
    { toolCalls: [{ name: 'big', arguments: {} }] },
  ];
  // this process's worker and client get the driver by option; the CLI below gets it from the environment
  keel = await startKeel({
    scripts: { s3: { rules } },
    tools: [big, pad],
    payloadStorage: { s3: { bucket: BUCKET, client: s3 } },
  });
}, 180_000);

afterAll(async () => {
  await keel?.stop();
  s3?.destroy();
  await moto?.stop();
});

async function objects(): Promise<_Object[]> {
  const out: _Object[] = [];
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, ContinuationToken: token }));
    out.push(...(page.Contents ?? []));
    token = page.NextContinuationToken;
  } while (token);
  return out;
}

it(`a run's large payloads go to S3 (moto ${MOTO_VERSION}); history holds references; client and CLI read them back`, async (ctx) => {
  if (!moto) return ctx.skip(`no S3-compatible server: ${unavailable}`);
  const k = keel!;
  const workflowId = `s3-${Date.now()}`;
  const h = await k.start(
    { model: 'scripted/s3', prompt: 'go', tools: ['big', 'pad'], continueAsNewAfterBytes: 65536 },
    workflowId,
  );
  const r = await h.result();
  expect([r.status, r.finalText, r.turns]).toEqual(['completed', 'all done', 3]);
  const state = await h.state();
  expect(state.continuedAsNew).toBe(1);

  // the prompt, big's call and 2.5 MB result, pad's call and result, the reply
  const all = await h.allMessages();
  expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant', 'toolResult', 'assistant']);
  const text = (m: Message) => (m.role === 'toolResult' && m.content[0].type === 'text' ? m.content[0].text : '');
  expect(text(all[2])).toBe('big:'.padEnd(BIG, 'b'));
  expect(r.newMessages.map((m) => text(m).length)).toEqual([0, 0, BIG, 0, PAD, 0]);

  // the bucket: keys in the SDK's layout, content-addressed, under this workflow (the run id is `null` where the SDK
  // does not know it yet): the tool result, the carried transcript, the result
  const keys = (await objects()).map((o) => o.Key!);
  const runIds: string[] = [];
  for await (const wf of k.client.client.workflow.list({ query: `WorkflowId = '${workflowId}'` }))
    runIds.push(wf.runId);
  expect(runIds).toHaveLength(2);
  const layout = new RegExp(
    `^v0/ns/default/wt/agentWorkflow/wi/${workflowId}/ri/(null|${runIds.join('|')})/d/sha256/[0-9a-f]{64}$`,
  );
  expect(keys.filter((key) => layout.test(key)).length).toBeGreaterThanOrEqual(3);
  const stored = await Promise.all(
    keys.map(
      async (Key) =>
        (await (await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key }))).Body!.transformToByteArray()).length,
    ),
  );
  expect(Math.max(...stored)).toBeGreaterThan(BIG);

  // history: references (driver aws.s3driver), never the 2.5 MB text
  for (const runId of runIds) {
    const history = historyText(await k.client.client.workflow.getHandle(workflowId, runId).fetchHistory());
    expect(history).toContain('aws.s3driver');
    expect(history).not.toContain('big:bbbb');
    expect(Buffer.byteLength(history)).toBeLessThan(512 * 1024);
  }

  // the CLI picks S3 from the environment alone
  const cli = spawn(
    process.execPath,
    [BIN, '--address', k.address, '--task-queue', k.taskQueue, 'transcript', workflowId, '--format', 'json'],
    {
      env: {
        ...process.env,
        NO_COLOR: '1',
        KEEL_PAYLOAD_S3_BUCKET: BUCKET,
        KEEL_PAYLOAD_S3_FORCE_PATH_STYLE: '1',
        AWS_ENDPOINT_URL_S3: moto.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: CREDENTIALS.secretAccessKey,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  cli.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  cli.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise((res) => cli.on('close', res));
  expect(code, stderr).toBe(0);
  const printed = JSON.parse(stdout) as Message[];
  expect(printed.map((m) => text(m).length)).toEqual([0, 0, BIG, 0, PAD, 0]);
}, 180_000);

it('a client without the S3 store reading a large run: PayloadStoreMissingError naming the option to pass', async (ctx) => {
  if (!moto) return ctx.skip(`no S3-compatible server: ${unavailable}`);
  const k = keel!;
  const h = await k.start({ model: 'scripted/s3', prompt: 'go', tools: ['big', 'pad'] }, `s3-no-store-${Date.now()}`);
  expect((await h.result()).status).toBe('completed');
  const text =
    'This run\'s payload is stored in S3 (bucket "keel-payloads") and this client has no S3 payload store: connect ' +
    'with AgentClient.connect({ payloadStorage: { s3: { bucket: "keel-payloads" } } }), or for the keel CLI set ' +
    'KEEL_PAYLOAD_S3_BUCKET=keel-payloads (with AWS_REGION, AWS_ENDPOINT_URL_S3 and credentials that reach it)';
  // no store at all, and Keel's filesystem store instead of the workers' S3
  for (const payloadStorage of [false, { dir: mkdtempSync(join(tmpdir(), 'keel-no-s3-')) }] as const) {
    const client = await AgentClient.connect({ address: k.address, taskQueue: k.taskQueue, payloadStorage });
    try {
      const run = client.get(h.workflowId);
      expect((await run.state()).status).toBe('completed'); // small: inline
      for (const read of [() => run.messages(), () => run.result(), () => run.allMessages()]) {
        const err = await read().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(err).toBeInstanceOf(PayloadStoreMissingError);
        expect((err as Error).message).toBe(text);
      }
    } finally {
      await client.close();
    }
  }
}, 180_000);
