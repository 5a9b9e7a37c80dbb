/**
 * A finished tool call is never reported as failed because storing its result failed (issue 20 item 1). The worker
 * and the client reach a real S3-compatible server (moto, scripts/moto-server.mjs) through a TCP relay the test can
 * close: while it is closed S3 refuses connections, as in an outage. The tool blocks S3 as it finishes, so its 300 KB
 * result cannot be written; the worker keeps retrying the write (short backoff for the test) far past the tool's own
 * retry policy, shows it in the activity's heartbeat details, and the run completes once S3 is back: the tool ran once
 * and the transcript holds its real result. Cancelling during the outage gives the documented `Operation aborted`.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { AgentRunHandle } from '../../client/agent-client.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { StoreHeartbeat } from '../../common/events.js';
import type { Message } from '../../common/messages.js';
import { startMotoServer } from '../../scripts/moto-server.mjs';
import { startKeel, until, workflowTaskFailures, type Keel } from './harness.js';

const BUCKET = 'keel-outage';
const CREDENTIALS = { accessKeyId: 'keel-test', secretAccessKey: 'keel-test-secret' };
const RESULT = 'out:'.padEnd(300 * 1024, 'o'); // over the 256 KiB threshold: offloaded

/** A TCP relay to moto on a fixed local port; `block()` closes the port (connection refused), `unblock()` reopens it. */
class Relay {
  private server?: Server;
  private readonly sockets = new Set<Socket>();
  port = 0;
  constructor(private readonly target: URL) {}

  async unblock(): Promise<void> {
    if (this.server) return;
    const server = createServer((client) => {
      const upstream = connect(Number(this.target.port), this.target.hostname);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.pipe(upstream).pipe(client);
    });
    await new Promise<void>((res, rej) => {
      server.once('error', rej);
      server.listen(this.port, '127.0.0.1', () => res());
    });
    this.server = server;
    this.port = (server.address() as { port: number }).port;
  }

  block(): void {
    this.server?.close();
    this.server = undefined;
    for (const s of this.sockets) s.destroy();
  }
}

let moto: { endpoint: string; stop: () => Promise<void> } | undefined;
let unavailable = '';
let relay: Relay;
let keel: Keel | undefined;
const executions = { slow_write: 0, fragile: 0 };

const outputTool = (name: 'slow_write' | 'fragile', idempotent: boolean) =>
  defineTool({
    name,
    description: 'Writes 300 KB of output; S3 goes away as it finishes.',
    parameters: { type: 'object', properties: {} },
    idempotent,
    // today's retries would give up within a second
    ...(idempotent ? { retry: { initialInterval: '100ms', backoffCoefficient: 1, maximumAttempts: 5 } } : {}),
    execute: async () => {
      executions[name] += 1;
      relay.block();
      return { content: [{ type: 'text', text: RESULT }] };
    },
  });

beforeAll(async () => {
  try {
    moto = await startMotoServer({ log: (line) => console.log(line) });
  } catch (err) {
    unavailable = err instanceof Error ? err.message : String(err);
    return;
  }
  relay = new Relay(new URL(moto.endpoint));
  await relay.unblock();
  const s3 = new S3Client({
    endpoint: `http://127.0.0.1:${relay.port}`,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: CREDENTIALS,
    maxAttempts: 1,
  });
  await s3.send(new CreateBucketCommand({ Bucket: BUCKET }));
  keel = await startKeel({
    scripts: {
      outage: {
        rules: [
          { match: 'toolResult:', text: 'noted' },
          { match: 'cancel me', toolCalls: [{ name: 'fragile', arguments: {} }] },
          { toolCalls: [{ name: 'slow_write', arguments: {} }] },
        ],
      },
    },
    tools: [outputTool('slow_write', true), outputTool('fragile', false)],
    payloadStorage: { s3: { bucket: BUCKET, client: s3 }, storeRetry: { initialInterval: 100, maximumInterval: 400 } },
  });
}, 180_000);

afterAll(async () => {
  await relay?.unblock();
  await keel?.stop();
  await moto?.stop();
});

/** The pending tool activity's heartbeat while its outcome waits for the store. */
async function storing(h: AgentRunHandle): Promise<StoreHeartbeat | undefined> {
  const raw = (await h.workflow.describe()).raw;
  for (const a of raw.pendingActivities ?? []) {
    const payload = a.heartbeatDetails?.payloads?.[0];
    const d = payload ? (defaultPayloadConverter.fromPayload(payload as never) as { kind?: string }) : undefined;
    if (d?.kind === 'store') return d as StoreHeartbeat;
  }
  return undefined;
}

const closed = async (h: AgentRunHandle) => (await h.workflow.describe()).status.name !== 'RUNNING';

const text = (m: Message) => (m.role === 'toolResult' && m.content[0].type === 'text' ? m.content[0].text : '');

it("an S3 outage longer than the tool's retries: the write is retried until S3 is back; the tool ran once, its result is in the transcript", async (ctx) => {
  if (!moto) return ctx.skip(`no S3-compatible server: ${unavailable}`);
  const h = await keel!.start({ model: 'scripted/outage', prompt: 'write', tools: ['slow_write'] });
  const started = Date.now();
  let beat: StoreHeartbeat | undefined;
  // ten failed writes (with today's policy the call would have failed after five attempts 100 ms apart), or the end
  await until(
    async () => ((beat = (await storing(h)) ?? beat)?.attempts ?? 0) >= 10 || (await closed(h)),
    60_000,
    'ten failed writes',
    100,
  );
  const outageMs = Date.now() - started;
  await relay.unblock();

  const r = await h.result();
  const all = await h.allMessages();
  expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult', 'assistant']);
  expect([text(all[2]).slice(0, 200), text(all[2]) === RESULT]).toEqual([RESULT.slice(0, 200), true]);
  expect(all[2]).toMatchObject({ toolName: 'slow_write', isError: false });
  expect([r.status, r.finalText, r.turns]).toEqual(['completed', 'noted', 2]);
  expect(executions.slow_write).toBe(1);
  // the wait was visible in the activity's heartbeat details
  expect(beat).toMatchObject({ kind: 'store', activity: 'runToolCall' });
  expect(beat!.lastError).toMatch(
    /^S3StorageDriver store failed \[bucket=keel-outage, key=v0\/ns\/default\/wt\/agentWorkflow\/.*: connect ECONNREFUSED 127\.0\.0\.1:\d+$/,
  );
  expect(outageMs).toBeGreaterThan(2000);
  expect(await workflowTaskFailures(h)).toEqual([]);
}, 120_000);

it('cancelled during the outage: the run ends cancelled, the call gets `Operation aborted`; the tool ran once', async (ctx) => {
  if (!moto) return ctx.skip(`no S3-compatible server: ${unavailable}`);
  await relay.unblock();
  const h = await keel!.start({ model: 'scripted/outage', prompt: 'cancel me', tools: ['fragile'] });
  await until(
    async () => ((await storing(h))?.attempts ?? 0) >= 3 || (await closed(h)),
    60_000,
    'three failed writes',
    100,
  );
  expect(await h.cancel('operator')).toEqual({ status: 'cancelled' });
  const r = await h.result();
  expect(r.status).toBe('cancelled');
  await relay.unblock();
  const all = await h.allMessages();
  expect(all.map((m) => m.role)).toEqual(['user', 'assistant', 'toolResult']);
  expect(all[2]).toMatchObject({ toolName: 'fragile', isError: true });
  expect(text(all[2])).toBe('Operation aborted');
  expect(executions.fragile).toBe(1);
  expect(await workflowTaskFailures(h)).toEqual([]);
}, 120_000);
