/**
 * The fleet stream transport (docs/live-output.md#fleet-transport) against a real `redis-server` this file starts on a
 * free port, configured the one way a deployment does — `$KEEL_STREAM_REDIS_URL` on worker and client alike: the
 * live-stream scenarios of stream.test.ts pass on it (exact text, `attempt_reset` after a killed attempt, resume by
 * offset, continue-as-new) without the reader ever polling through the heartbeats; the store killed mid-run sends the
 * readers to the heartbeats and the run completes with the exact text; the store back, the readers move back.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it, inject } from 'vitest';
import type { ScriptedReply } from '../../activities/model/scripted.js';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import { messageText, type AssistantMessage, type Message } from '../../common/messages.js';
import { StreamOffset, StreamView, blockText, type StreamEvent } from '../../common/stream.js';
import { FLEET_STREAM_ENV } from '../../node-common/fleet-stream/config.js';
import { keelClientDataConverter } from '../../node-common/payload-storage.js';
import { setFleetStream } from '../../client/fleet-stream/registry.js';
import { countingConnection } from '../../bench/counting-connection.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import { gate, ONE_REPLY_EVENT_TYPES, startKeel, until, type Keel } from './harness.js';
import { RedisServer } from './redis-server.js';
import { blobTool, holdTool, progressTool } from './tool-fixtures.js';
import { defineTool } from '../../activities/tools/define-tool.js';

const STREAM_WORKER = fileURLToPath(new URL('./fixtures/stream-worker.ts', import.meta.url));
const STREAM_REPLY = Array.from({ length: 50 }, (_, i) => `<${String(i).padStart(4, '0')}>`).join('');

/** The store's password: in the URL the worker and client are given, never in a run's history or Keel's output. */
const PASSWORD = 'fleet-s3cret-pw';
let redis: RedisServer;
const envBefore = process.env[FLEET_STREAM_ENV];
beforeAll(async () => {
  redis = await RedisServer.start(PASSWORD);
  process.env[FLEET_STREAM_ENV] = redis.url;
});
afterAll(async () => {
  killAllWorkers();
  if (envBefore === undefined) delete process.env[FLEET_STREAM_ENV];
  else process.env[FLEET_STREAM_ENV] = envBefore;
  await redis?.kill();
});

/** A stream read: its events, and the paths the reader took (`onTransport`). */
interface Read {
  events: StreamEvent[];
  paths: string[];
}

/** Reads `h.stream(from)` until it ends or `stop(events)`; checks offsets increase. `paths` fills as it goes. */
async function read(
  h: AgentRunHandle,
  from: number,
  stop: (events: StreamEvent[]) => boolean = () => false,
  into: Read = { events: [], paths: [] },
): Promise<Read> {
  let last = from;
  for await (const e of h.stream({ from, onTransport: (p) => into.paths.push(p) })) {
    if (e.offset !== undefined) {
      expect(e.offset).toBeGreaterThan(last);
      last = e.offset;
    }
    into.events.push(e);
    if (stop(into.events)) break;
  }
  return into;
}

/** Checks the deltas alone give every assistant message of `transcript` exactly, each block a prefix at every step. */
function expectDeltasExact(events: StreamEvent[], transcript: Message[]): void {
  const view = new StreamView();
  for (const e of events.filter((e) => e.type !== 'message_end')) {
    view.apply(e);
    if (e.type !== 'message_update') continue;
    const final = blockText((transcript[e.messageIndex] as AssistantMessage).content[e.block]);
    expect(final.startsWith(view.messages.get(e.messageIndex)![e.block].text)).toBe(true);
  }
  const want = transcript.flatMap((m, i) => (m.role === 'assistant' ? [[i, m.content.map(blockText)]] : []));
  const got = [...view.messages].map(([i, blocks]) => [i, blocks.map((b) => b.text)]).sort(([a], [b]) => +a - +b);
  expect(got).toEqual(want);
}

/** Deltas that came live (not a call's tail), for message `i`. */
const liveDeltas = (events: StreamEvent[], i: number) =>
  events.filter(
    (e) => e.type === 'message_update' && e.messageIndex === i && StreamOffset.parse(e.offset).kind === 'delta',
  );

/** The names of the store's clients (`CLIENT LIST`). */
async function storeClients(): Promise<string[]> {
  const admin = new Redis(redis.url, { lazyConnect: true });
  try {
    await admin.connect();
    const list = (await admin.client('LIST')) as string;
    return [...list.matchAll(/ name=(\S*)/g)].map((m) => m[1]);
  } finally {
    admin.disconnect();
  }
}

const lastOffset = (events: StreamEvent[]) => events.findLast((e) => e.offset !== undefined)!.offset;

describe('fleet stream transport (Redis)', () => {
  it('exact text and one attempt_reset across kill -9 of the worker mid model attempt; a resuming reader goes on by offset; no heartbeat polling', async () => {
    const taskQueue = `fleet-${randomUUID()}`;
    const env = { KEEL_TASK_QUEUE: taskQueue, [FLEET_STREAM_ENV]: redis.url };
    const first = await spawnWorker(STREAM_WORKER, { ...env, KEEL_CHUNK_MS: '150' });
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    const h = await client.start(
      { model: 'scripted/stream', prompt: 'stream please', heartbeatTimeout: '2s' },
      { workflowId: `fleet-${randomUUID()}` },
    );
    const before = await read(h, 0, (es) => es.filter((e) => e.type === 'message_update').length >= 5);
    await killWorker(first);
    await spawnWorker(STREAM_WORKER, { ...env, KEEL_CHUNK_MS: '30' });
    const [joined, after] = await Promise.all([read(h, 0), read(h, lastOffset(before.events))]);
    const transcript = await h.allMessages();
    expect(messageText(transcript[1])).toBe(STREAM_REPLY);
    const resumed = [...before.events, ...after.events];
    for (const events of [resumed, joined.events]) {
      expectDeltasExact(events, transcript);
      expect(events.filter((e) => e.type === 'attempt_reset')).toEqual([
        expect.objectContaining({ type: 'attempt_reset', messageIndex: 1, attempt: 2 }),
      ]);
      expect(
        events.filter((e) => e.type !== 'message_update' && e.type !== 'attempt_reset').map((e) => e.type),
      ).toEqual(ONE_REPLY_EVENT_TYPES);
      expect(liveDeltas(events, 1).length).toBeGreaterThan(5);
    }
    for (const r of [before, after, joined]) expect(r.paths).toEqual(['store']);
    await client.close();
  });

  describe('one worker', () => {
    const { tool: progress, steps } = progressTool();
    const released = gate();
    // a second progress tool of its own (the outage test opens the first one's gates)
    const reported = [gate(), gate()];
    const stepsTool = defineTool({
      name: 'steps',
      description: 'Reports two steps of progress.',
      parameters: { type: 'object', properties: {} },
      execute: async (_id, _args, _signal, onUpdate) => {
        for (const [i, step] of reported.entries()) {
          onUpdate({ content: [{ type: 'text', text: `step ${i + 1} of 2` }], details: {} });
          await step.promise;
        }
        return { content: [{ type: 'text', text: 'steps done' }] };
      },
    });
    const turns: ScriptedReply[] = [];
    for (let n = 1; n < 8; n++)
      turns.push({
        text: `turn ${n} `.repeat(12),
        chunkDelayMs: 15,
        toolCalls: [{ name: 'blob', arguments: { kb: 24, n } }],
      });
    turns.push({ text: 'all done, every turn streamed', chunkDelayMs: 15 });
    const slow = (text: string): ScriptedReply => ({ text: `${text} `.repeat(20), chunkDelayMs: 10 });
    let keel: Keel;
    beforeAll(async () => {
      keel = await startKeel({
        tools: [blobTool, progress, holdTool(released), stepsTool],
        scripts: {
          stepped: {
            replies: [
              { text: 'before the steps '.repeat(5), chunkDelayMs: 10, toolCalls: [{ name: 'steps', arguments: {} }] },
              { text: 'after the steps', chunkDelayMs: 10 },
            ],
          },
          long: { replies: turns },
          relayed: { replies: turns.slice(0, 5).concat(turns.at(-1)!) },
          outage: {
            replies: [
              { ...slow('before'), toolCalls: [{ name: 'hold', arguments: {} }] },
              { ...slow('during'), toolCalls: [{ id: 'tool-1', name: 'progress', arguments: { job: 'build' } }] },
              slow('after'),
            ],
          },
        },
      });
    });
    afterAll(() => keel?.stop());

    it('across continue-as-new: a reader from 0, a resuming one and a late one end with every message streamed', async () => {
      const h = await keel.start({
        model: 'scripted/long',
        prompt: 'go',
        tools: ['blob'],
        continueAsNewAfterBytes: 65536,
      });
      const before = await read(h, 0, (es) => es.some((e) => e.type === 'turn_end'));
      const [after, joined] = await Promise.all([read(h, lastOffset(before.events)), read(h, 0)]);
      const late = await read(h, 0);
      expect((await h.state()).continuedAsNew).toBeGreaterThanOrEqual(2);
      const transcript = await h.allMessages();
      for (const events of [[...before.events, ...after.events], joined.events, late.events]) {
        expectDeltasExact(events, transcript);
        const ends = events.filter((e) => e.type === 'message_end').map((e) => (e as { message: Message }).message);
        expect(ends).toEqual(transcript);
      }
      for (const r of [before, after, joined, late]) expect(r.paths).toEqual(['store']);
    });

    it('the durable events come through the store: a reader asks the workflow for them only at its start and end, not once per model call', async () => {
      const { connection, calls } = await countingConnection(keel.address);
      const client = new Client({ connection, dataConverter: keelClientDataConverter() });
      setFleetStream(client.workflow, undefined); // $KEEL_STREAM_REDIS_URL
      const h = await keel.start({ model: 'scripted/relayed', prompt: 'go', tools: ['blob'] });
      const r = await read(new AgentClient(client, keel.taskQueue).getHandle(h.workflowId), 0);
      const transcript = await h.allMessages();
      expectDeltasExact(r.events, transcript);
      const ends = r.events.filter((e) => e.type === 'message_end').map((e) => (e as { message: Message }).message);
      expect(ends).toEqual(transcript);
      const heartbeats = new Client({
        connection: keel.client.client.connection,
        dataConverter: keelClientDataConverter(),
      });
      setFleetStream(heartbeats.workflow, false);
      const other = await read(new AgentClient(heartbeats, keel.taskQueue).getHandle(h.workflowId), 0);
      const durable = (events: StreamEvent[]) =>
        events.filter((e) => StreamOffset.parse(e.offset).kind === 'durable').map((e) => [e.type, e.offset]);
      expect(durable(r.events)).toEqual(durable(other.events)); // the same durable events as the heartbeat path
      expect(r.paths).toEqual(['store']);
      expect(transcript.filter((m) => m.role === 'assistant')).toHaveLength(6);
      expect(calls.QueryWorkflow ?? 0).toBeLessThanOrEqual(2);
      await connection.close();
    });

    it('tool updates and the close come through the store too: a reader of a run with a tool call asks Temporal at most twice in all', async () => {
      const { connection, calls } = await countingConnection(keel.address);
      const client = new Client({ connection, dataConverter: keelClientDataConverter() });
      setFleetStream(client.workflow, undefined); // $KEEL_STREAM_REDIS_URL
      const h = await keel.start({ model: 'scripted/stepped', prompt: 'go', tools: ['steps'] });
      const r: Read = { events: [], paths: [] };
      const reading = read(new AgentClient(client, keel.taskQueue).getHandle(h.workflowId), 0, () => false, r);
      const updates = () => r.events.filter((e) => e.type === 'tool_execution_update');
      // each step is held until the reader showed it (the old reader described the run for them, and for its close)
      for (const [i, step] of reported.entries()) {
        await until(async () => updates().length === i + 1);
        step.open();
      }
      await reading;
      const transcript = await h.allMessages();
      expectDeltasExact(r.events, transcript);
      const ends = r.events.filter((e) => e.type === 'message_end').map((e) => (e as { message: Message }).message);
      expect(ends).toEqual(transcript);
      const texts = updates().map((e) => JSON.stringify((e as { partialResult: unknown }).partialResult));
      expect(texts).toEqual([expect.stringContaining('step 1 of 2'), expect.stringContaining('step 2 of 2')]);
      const types = r.events.map((e) => e.type).filter((t) => t.startsWith('tool_execution'));
      expect(types).toEqual([
        'tool_execution_start',
        'tool_execution_update',
        'tool_execution_update',
        'tool_execution_end',
      ]);
      expect(r.paths).toEqual(['store']);
      expect((calls.DescribeWorkflowExecution ?? 0) + (calls.QueryWorkflow ?? 0)).toBeLessThanOrEqual(2);
      await connection.close();
    });

    it('the store killed mid-run: the reader falls back to the heartbeats, the run completes with the exact text; the store back: the reader moves back', async () => {
      const h = await keel.start({ model: 'scripted/outage', prompt: 'go', tools: ['hold', 'progress'] });
      const r: Read = { events: [], paths: [] };
      const reading = read(h, 0, () => false, r);
      const said: string[] = [];
      const write = process.stderr.write.bind(process.stderr);
      process.stderr.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
        said.push(String(chunk));
        return write(chunk, ...rest);
      }) as typeof process.stderr.write;
      await until(async () => r.events.some((e) => e.type === 'tool_execution_start'));
      expect(liveDeltas(r.events, 1).length).toBeGreaterThan(5); // the first reply came through the store
      await redis.kill();
      await until(async () => r.paths.length === 2);
      expect(r.paths).toEqual(['store', 'heartbeat']);
      // the second reply streams while the store is down (the worker's appends fail; the run does not)
      released.open();
      await until(async () => r.events.some((e) => e.type === 'tool_execution_update'));
      expect(liveDeltas(r.events, 3).length).toBeGreaterThan(0);
      await redis.restart();
      await until(async () => r.paths.length === 3);
      expect(r.paths).toEqual(['store', 'heartbeat', 'store']);
      await until(async () => (await storeClients()).includes('keel-stream-worker')); // the worker's appender is back
      steps[0].open();
      steps[1].open();
      await reading;
      process.stderr.write = write;
      // the worker said once that the store was away, naming it without its password
      const line = said.filter((l) => l.includes('stream store'));
      expect(line).toEqual([expect.stringContaining(`redis://***@127.0.0.1:${redis.port}`)]);
      expect(said.join('')).not.toContain(PASSWORD);
      const history = JSON.stringify((await h.workflow.fetchHistory()).events);
      expect(history).not.toContain(PASSWORD);
      const transcript = await h.allMessages();
      expect((await h.result()).status).toBe('completed');
      expectDeltasExact(r.events, transcript);
      expect(messageText(transcript.at(-1)!)).toBe('after '.repeat(20));
      expect(liveDeltas(r.events, transcript.length - 1).length).toBeGreaterThan(5); // the third through the store again
    });
  });
});
