/**
 * Payload encryption (README "Encryption", issue 23 item 1) on a real dev server: with the codec on, no prompt, reply,
 * tool argument or result text is in the raw history (the Temporal CLI, no codec) nor in the payload store's files; the
 * run reads back in full through AgentClient and the keel CLI; a caller's own codec runs before encryption; a rotation
 * keeps old runs readable and seals new payloads with the new key; a clear start on an encrypting worker fails at once
 * with the exact text and no workflow task failure; an old clear run and a new sealed one both complete on one worker;
 * a party without the key ring says what to pass.
 */
import { execFile, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Payload, PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import {
  EncryptionCodec,
  isEncrypted,
  NoKeyRingError,
  readKeyRing,
  newKeyRingJson,
  parseKeyRing,
  type EncryptionOption,
  type KeyRing,
} from '../../node-common/encryption.js';
import type { Message } from '../../common/messages.js';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { UNSEALED_BATCH_START, UNSEALED_START } from '../../node-common/encryption.js';
import { startKeel, until, workflowTaskFailures, type Keel } from './harness.js';
import type { MessageUpdateEvent } from '../../common/stream.js';

const { Payload: PayloadProto } = proto.temporal.api.common.v1;
const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));

const PROMPT = 'prompt-secret-7f3a';
const ARG = 'argument-secret-91c2';
const RESULT = 'result-secret-44e1';
const REPLY = 'reply-secret-d0b8';
const BIG = 'big-secret-5e6a;'.repeat(20_000); // 320 KB: over the 256 KiB threshold, offloaded to the store
const FAILURE = 'failure-secret-3c9d';
const SECRETS = [PROMPT, ARG, RESULT, REPLY, 'big-secret-5e6a', FAILURE];
/** A reply streamed in 30 chunks of 8 characters, 100 ms apart (3 s): a reader sees it while the call runs. */
const LIVE = Array.from({ length: 30 }, (_, i) => `<live${String(i).padStart(2, '0')}>`).join('');

const echo = defineTool({
  name: 'echo',
  description: 'Echoes its text, and a large attachment.',
  parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  execute: async (_id, args: { text: string }) => ({
    content: [
      { type: 'text', text: `${RESULT}:${args.text}` },
      { type: 'text', text: BIG },
    ],
  }),
});
const scripts = {
  enc: {
    rules: [
      { match: 'toolResult:echo', text: `${REPLY}, done` },
      { match: 'again', text: 'again done' },
      { match: 'provider-down', fail: { message: `${FAILURE}: the provider said no`, retryable: false } },
      { match: 'stream-live', text: LIVE, chunkDelayMs: 100 },
      { toolCalls: [{ name: 'echo', arguments: { text: ARG } }] },
    ],
  },
};

/** A caller's codec: marks every payload it encodes (`keel-test-marker`), and counts its calls. */
class MarkerCodec implements PayloadCodec {
  encoded = 0;
  async encode(payloads: Payload[]): Promise<Payload[]> {
    this.encoded += payloads.length;
    return payloads.map((p) => ({ ...p, metadata: { ...p.metadata, 'keel-test-marker': Buffer.from('1') } }));
  }
  async decode(payloads: Payload[]): Promise<Payload[]> {
    return payloads.map((p) => {
      const { 'keel-test-marker': _m, ...metadata } = p.metadata ?? {};
      return { ...p, metadata };
    });
  }
}

const dir = mkdtempSync(join(tmpdir(), 'keel-enc-'));
const payloadDir = join(dir, 'payloads');
const keysFile = join(dir, 'keys.json');
const rotatedFile = join(dir, 'keys-rotated.json');
let ring: KeyRing;
let rotated: KeyRing;
const marker = new MarkerCodec();
let keel: Keel;
let sealedRunId = '';

/** Every string of the Temporal CLI's JSON, and each one read as base64 (payload data and metadata). */
function rawTexts(json: unknown): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (typeof v === 'string') out.push(v, Buffer.from(v, 'base64').toString('latin1'));
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
  };
  walk(json);
  return out;
}

/** The key ids named in a raw history's payloads (`encryption-key-id`, base64 in the CLI's JSON). */
function keyIds(json: unknown): Set<string> {
  const ids = new Set<string>();
  const walk = (v: unknown) => {
    if (!v || typeof v !== 'object') return;
    const meta = (v as { metadata?: Record<string, string> }).metadata;
    if (meta?.['encryption-key-id']) ids.add(Buffer.from(meta['encryption-key-id'], 'base64').toString());
    Object.values(v).forEach(walk);
  };
  walk(json);
  return ids;
}

/** `temporal workflow show --output json` of every run of the chain: the raw history, read without any codec. */
async function rawHistory(workflowId: string, runId?: string): Promise<unknown> {
  const cli = await ensureTemporalCli();
  const args = ['workflow', 'show', '--workflow-id', workflowId, '--output', 'json', '--address', keel.address];
  if (runId) args.push('--run-id', runId);
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(cli, args, { timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (err, out, stderr) =>
      err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve(out),
    ),
  );
  return JSON.parse(stdout) as unknown;
}

function storeFiles(): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(payloadDir);
  return out;
}

async function keelCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const cli = spawn(process.execPath, [BIN, '--address', keel.address, '--task-queue', keel.taskQueue, ...args], {
    env: { ...process.env, NO_COLOR: '1', KEEL_PAYLOAD_DIR: payloadDir, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  cli.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  cli.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((res) => cli.on('close', res));
  return { code, stdout, stderr };
}

const textOf = (m: Message): string =>
  'content' in m && Array.isArray(m.content) ? m.content.map((b) => (b.type === 'text' ? b.text : '')).join('') : '';

beforeAll(async () => {
  const keyRingJson = JSON.stringify({ primary: 'k1', keys: { k1: randomBytes(32).toString('base64') } });
  writeFileSync(keysFile, keyRingJson, { mode: 0o600 });
  ring = readKeyRing(keysFile);
  writeFileSync(rotatedFile, newKeyRingJson('k2', ring), { mode: 0o600 });
  rotated = readKeyRing(rotatedFile);
  keel = await startKeel({
    scripts,
    tools: [echo],
    payloadStorage: { dir: payloadDir },
    encryption: { keysFile },
    workerOptions: { dataConverter: { payloadCodecs: [marker] } },
  });
}, 120_000);

afterAll(async () => {
  await keel?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('payload encryption', () => {
  it('a sealed run: no prompt, argument, result or reply text in raw history or the store; it reads back in full', async () => {
    const h = await keel.start({ model: 'scripted/enc', prompt: PROMPT, tools: ['echo'] });
    const r = await h.result();
    expect([r.status, r.finalText]).toEqual(['completed', `${REPLY}, done`]);
    sealedRunId = h.workflowId;

    // raw history, no codec: every payload sealed under k1, no secret in any string nor in any base64 field
    const raw = await rawHistory(h.workflowId);
    const texts = rawTexts(raw);
    for (const secret of SECRETS) expect(texts.filter((t) => t.includes(secret))).toEqual([]);
    expect(texts).toContain('binary/encrypted');
    expect(keyIds(raw)).toEqual(new Set(['k1']));

    // the store: the large result was offloaded, and every stored object is ciphertext
    const files = storeFiles();
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
      const bytes = readFileSync(file);
      for (const secret of SECRETS) expect(bytes.toString('latin1')).not.toContain(secret);
      expect(isEncrypted(PayloadProto.decode(bytes))).toBe(true);
    }
    expect(Math.max(...files.map((f) => statSync(f).size))).toBeGreaterThan(BIG.length);

    // the caller's codec ran on the worker, before encryption: the sealed payload holds its marker
    expect(marker.encoded).toBeGreaterThan(0);
    const scheduled = (
      await keel.client.client.workflowService.getWorkflowExecutionHistory({
        namespace: 'default',
        execution: { workflowId: h.workflowId },
      })
    ).history!.events!.find((e) => e.activityTaskScheduledEventAttributes)!; // startRun's input, written by the worker
    const sealed = scheduled.activityTaskScheduledEventAttributes!.input!.payloads![0] as Payload;
    expect(isEncrypted(sealed)).toBe(true);
    const [opened] = await new EncryptionCodec(ring).decode([sealed]);
    expect(Buffer.from(opened.metadata!['keel-test-marker']!).toString()).toBe('1');

    // AgentClient: transcript and state
    const all = await h.allMessages();
    expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
    expect(textOf(all[0])).toBe(PROMPT);
    expect(all[1].role === 'assistant' && all[1].content).toEqual([
      expect.objectContaining({ type: 'toolCall', name: 'echo', arguments: { text: ARG } }),
    ]);
    expect(textOf(all[2])).toBe(`${RESULT}:${ARG}${BIG}`);
    expect(textOf(all[3])).toBe(`${REPLY}, done`);
    const state = await h.state();
    expect([state.status, state.lastReply]).toEqual(['completed', `${REPLY}, done`]);

    // the keel CLI with --encryption-keys, and with $KEEL_ENCRYPTION_KEYS_FILE
    const transcript = await keelCli(['--encryption-keys', keysFile, 'transcript', h.workflowId, '--format', 'json']);
    expect(transcript.code, transcript.stderr).toBe(0);
    expect((JSON.parse(transcript.stdout) as Message[]).map(textOf)).toEqual(all.map(textOf));
    const status = await keelCli(['--json', 'status', h.workflowId], { KEEL_ENCRYPTION_KEYS_FILE: keysFile });
    expect(status.code, status.stderr).toBe(0);
    expect(JSON.parse(status.stdout)).toMatchObject({ status: 'completed' });
    expect(status.stdout).toContain(`${REPLY}, done`);
  }, 120_000);

  it("a live reader of a sealed run gets the reply's text while the model call streams it, through the client's key ring", async () => {
    const h = await keel.start({ model: 'scripted/enc', prompt: 'stream-live' });
    let first: MessageUpdateEvent | undefined;
    for await (const e of h.stream()) {
      if (e.type !== 'message_update') continue;
      first = e;
      break;
    }
    // the call is still streaming: the worker's heartbeat details, sealed, were opened with the client's key ring
    // (they were skipped as "not JSON", so a sealed run's text only came with its message_end)
    const pending = (await h.workflow.describe()).raw.pendingActivities ?? [];
    const details = pending.find((a) => a.activityType?.name === 'callModel')?.heartbeatDetails?.payloads?.[0];
    expect(new TextDecoder().decode(details?.metadata?.encoding ?? undefined)).toBe('binary/encrypted');
    expect(first).toMatchObject({ type: 'message_update', messageIndex: 1, block: 0, kind: 'text' });
    expect(LIVE.startsWith(first!.delta)).toBe(true);
    expect((await h.result()).finalText).toBe(LIVE);
  });

  it('a failure is sealed too: the model activity failure message is not in raw history; the keyed client reads it', async () => {
    const h = await keel.start({ model: 'scripted/enc', prompt: `${PROMPT} provider-down` });
    const r = await h.result();
    expect([r.status, r.error]).toEqual(['failed', `${FAILURE}: the provider said no`]);

    const raw = await rawHistory(h.workflowId);
    const texts = rawTexts(raw);
    for (const secret of SECRETS) expect(texts.filter((t) => t.includes(secret))).toEqual([]);
    // the activity's failure in history: message and stack trace replaced, the original sealed in encodedAttributes
    const events = (raw as { events: { activityTaskFailedEventAttributes?: { failure: Record<string, unknown> } }[] })
      .events;
    const failure = events.find((e) => e.activityTaskFailedEventAttributes)!.activityTaskFailedEventAttributes!.failure;
    expect([failure.message, failure.stackTrace ?? '']).toEqual(['Encoded failure', '']);
    const encoded = failure.encodedAttributes as Payload & { metadata: Record<string, string> };
    expect(Buffer.from(encoded.metadata.encoding, 'base64').toString()).toBe('binary/encrypted');

    // what a keyed reader sees: the exact text (the SDK's failure converter decodes encodedAttributes)
    const fetched = await keel.client.client.workflowService.getWorkflowExecutionHistory({
      namespace: 'default',
      execution: { workflowId: h.workflowId },
    });
    const protoFailure = fetched.history!.events!.find((e) => e.activityTaskFailedEventAttributes)!
      .activityTaskFailedEventAttributes!.failure!;
    const [opened] = await new EncryptionCodec(ring).decode([protoFailure.encodedAttributes as Payload]);
    expect(JSON.parse(Buffer.from(opened.data!).toString())).toMatchObject({
      message: `${FAILURE}: the provider said no`,
    });
  }, 60_000);

  it('a party without the key ring reading a sealed run says what to pass (AgentClient, keel CLI)', async () => {
    expect(sealedRunId).not.toBe('');
    const text =
      'this run\'s payloads are encrypted (key "k1") and this process has no encryption key ring: give this ' +
      'process the key ring: `--encryption-keys <file>` (the keel CLI, keel worker, keel dev), ' +
      '$KEEL_ENCRYPTION_KEYS_FILE or $KEEL_ENCRYPTION_KEYS (any Keel process), or the encryption option ' +
      '(createAgentWorker, keelPlugin, AgentClient.connect)';
    const client = await AgentClient.connect({
      address: keel.address,
      taskQueue: keel.taskQueue,
      payloadStorage: { dir: payloadDir },
      encryption: false,
    });
    try {
      const err = await client
        .get(sealedRunId)
        .state()
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(NoKeyRingError);
      expect((err as Error).message).toBe(text);
    } finally {
      await client.close();
    }
    const cli = await keelCli(['status', sealedRunId]);
    expect([cli.code, cli.stderr.trim()]).toEqual([2, `keel: ${text}`]); // a usage error: the command needs the keys
  }, 60_000);

  /** A client without the key ring (a clear start), closed after `use`. */
  async function withClearClient(use: (clear: AgentClient) => Promise<void>): Promise<void> {
    const clear = await AgentClient.connect({
      address: keel.address,
      taskQueue: keel.taskQueue,
      payloadStorage: { dir: payloadDir },
      encryption: false,
    });
    try {
      await use(clear);
    } finally {
      await clear.close();
    }
  }

  it('a run started without encryption on an encrypting worker fails at its start with the exact text, no task retries', async () => {
    await withClearClient(async (clear) => {
      const { workflowId } = await clear.start({ model: 'scripted/enc', prompt: PROMPT, tools: ['echo'] });
      // its failure is sealed by the worker: read with the key ring
      const h = keel.client.get(workflowId);
      const err = (await h.workflow.result().catch((e: unknown) => e)) as {
        cause?: { message?: string; type?: string };
      };
      expect([err.cause?.type, err.cause?.message]).toEqual([
        'InvalidAgentInput',
        `Invalid AgentRunInput: ${UNSEALED_START}`,
      ]);
      expect(await workflowTaskFailures(h)).toEqual([]);
    });
  }, 60_000);

  it('a batch started without encryption on an encrypting worker fails at its start with the exact text; no task runs', async () => {
    await withClearClient(async (clear) => {
      const batch = await clear.startBatch([{ model: 'scripted/enc', prompt: PROMPT, tools: ['echo'] }]);
      const h = keel.client.client.workflow.getHandle(batch.workflowId);
      const err = (await h.result().catch((e: unknown) => e)) as { cause?: { message?: string; type?: string } };
      expect([err.cause?.type, err.cause?.message]).toEqual([
        'InvalidAgentBatchInput',
        `Invalid AgentBatchInput: ${UNSEALED_BATCH_START}`,
      ]);
      expect(await workflowTaskFailures(h)).toEqual([]);
      // no child was started
      const history = await h.fetchHistory();
      expect(history.events!.filter((e) => e.startChildWorkflowExecutionInitiatedEventAttributes)).toEqual([]);
    });
  }, 60_000);
});

describe('rotation and a mixed namespace', () => {
  let current: Keel | undefined;
  afterAll(async () => {
    await current?.stop();
  });

  it('an old clear run, a run sealed under k1 and a new run all complete on a worker with the rotated ring (k2)', async () => {
    const taskQueue = `test-${randomUUID()}`;
    const worker = async (encryption: EncryptionOption) => {
      await current?.stop();
      current = undefined;
      current = await startKeel({ scripts, tools: [echo], taskQueue, payloadStorage: { dir: payloadDir }, encryption });
      return current;
    };
    const answered = async (run: AgentRunHandle, reply: string) =>
      until(async () => (await run.state()).lastReply === reply, 30_000, `the run answered ${reply}`);

    // before encryption: a session started in clear, answered, waiting for a follow-up
    const clearKeel = await worker(false);
    const old = await clearKeel.start({ model: 'scripted/enc', prompt: 'hello', tools: ['echo'], mode: 'session' });
    await answered(old, `${REPLY}, done`);

    // encryption on (k1): a sealed session, answered, waiting
    const k1Keel = await worker({ keyRing: ring });
    const byK1 = await k1Keel.start({ model: 'scripted/enc', prompt: PROMPT, tools: ['echo'], mode: 'session' });
    await answered(byK1, `${REPLY}, done`);

    // a rotation: k2 primary, k1 kept
    const k2Keel = await worker({ keyRing: rotated });
    for (const id of [old.workflowId, byK1.workflowId]) {
      const run = k2Keel.client.get(id);
      await run.followUp('again');
      await answered(run, 'again done');
      await run.end();
      expect((await run.result()).status).toBe('completed');
      expect(await workflowTaskFailures(run)).toEqual([]);
    }
    // the k1 run reads back in full; its history holds both keys now
    expect((await k2Keel.client.get(byK1.workflowId).allMessages()).map(textOf)).toEqual([
      PROMPT,
      '',
      `${RESULT}:${ARG}${BIG}`,
      `${REPLY}, done`,
      'again',
      'again done',
    ]);
    expect(keyIds(await rawHistory(byK1.workflowId))).toEqual(new Set(['k1', 'k2']));

    const fresh = await k2Keel.start({ model: 'scripted/enc', prompt: PROMPT, tools: ['echo'] });
    expect((await fresh.result()).finalText).toBe(`${REPLY}, done`);
    expect(keyIds(await rawHistory(fresh.workflowId))).toEqual(new Set(['k2']));
  }, 180_000);

  it('a worker with the wrong key ring: its WorkflowTaskFailed is in clear, naming the key it lacks (issue 33 item 20)', async () => {
    const taskQueue = `test-${randomUUID()}`;
    const wrong = await startKeel({
      scripts,
      tools: [echo],
      taskQueue,
      payloadStorage: { dir: payloadDir },
      encryption: { keyRing: parseKeyRing(newKeyRingJson('k9'), 'wrong') },
    });
    const sealedClient = await AgentClient.connect({
      address: wrong.address,
      taskQueue,
      payloadStorage: { dir: payloadDir },
      encryption: { keyRing: ring },
    });
    try {
      const run = await sealedClient.start({ model: 'scripted/enc', prompt: PROMPT, tools: ['echo'] });
      let failures: string[] = [];
      await until(
        async () => (failures = await workflowTaskFailures(run)).length > 0,
        30_000,
        'a workflow task failure',
      );
      // read from the raw history, no key ring at all: the run's owner (ring k1) reads it as anyone does
      expect(failures[0]).toContain(
        `payload encrypted with key "k1", which is not in this key ring (k9): add that key to the key file ($KEEL_ENCRYPTION_KEYS_FILE) under its id`,
      );
      expect(failures[0]).not.toContain(PROMPT);
      await run.workflow.terminate('test over');
    } finally {
      await sealedClient.close();
      await wrong.stop();
    }
  }, 120_000);

  it('a worker without the key ring meets a sealed run: its workflow task fails with a text naming --encryption-keys; given the keys, the run completes', async () => {
    const taskQueue = `test-${randomUUID()}`;
    const keyless = await startKeel({
      scripts,
      tools: [echo],
      taskQueue,
      payloadStorage: { dir: payloadDir },
      encryption: false,
    });
    const sealedClient = await AgentClient.connect({
      address: keyless.address,
      taskQueue,
      payloadStorage: { dir: payloadDir },
      encryption: { keyRing: ring },
    });
    try {
      const run = await sealedClient.start({ model: 'scripted/enc', prompt: PROMPT, tools: ['echo'] });
      let failures: string[] = [];
      await until(
        async () => (failures = await workflowTaskFailures(run)).length > 0,
        30_000,
        'a workflow task failure',
      );
      expect(failures[0]).toContain(
        'this run\'s payloads are encrypted (key "k1") and this process has no encryption key ring: give this process the key ring: `--encryption-keys <file>`',
      );
      await keyless.stop();
      current = await startKeel({
        scripts,
        tools: [echo],
        taskQueue,
        payloadStorage: { dir: payloadDir },
        encryption: { keyRing: ring },
      });
      expect((await run.result()).finalText).toBe(`${REPLY}, done`);
    } finally {
      await sealedClient.close();
    }
  }, 120_000);
});
