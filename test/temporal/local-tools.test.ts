/**
 * Local placement of cheap idempotent tools (docs/local-tools.md): with `builtinTools({ localReadTools: true })` the
 * calls of `read` and `ls` (single calls, a parallel batch with its preparation, calls with bad arguments) and of a
 * user tool declaring `localActivity` are local-activity markers in the history, not scheduled activities; a tool that
 * does not declare it still runs as an activity; the transcript and the events are exactly those of the same run with
 * the placement off. A workflow running off the run's home worker has its first worker-local call refused there
 * (`KeelNotHome`, nothing ran) and runs it, and the later ones, as activities on the home queue. The histories replay
 * with the current code. An interrupt during a local call takes effect after it (docs/local-tools.md#limits); a call
 * that waits for approval is prepared and executed by two local activities.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { Worker, type ActivityInterceptorsFactory } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { AgentRunHandle } from '../../client/agent-client.js';
import type { Script } from '../../activities/model/scripted.js';
import { builtinTools } from '../../activities/tools/builtin/index.js';
import { defineTool, type AgentToolResult, type ToolDefinition } from '../../activities/tools/define-tool.js';
import { PATCH } from '../../workflows/patches.js';
import { allEvents, gate, notation, startKeel, strip, until, type Keel } from './harness.js';

const script: Script = {
  replies: [
    { toolCall: { name: 'read', arguments: { path: 'notes.txt' }, id: 'r1' } },
    {
      toolCalls: [
        { name: 'ls', arguments: {}, id: 'l1' },
        { name: 'read', arguments: { path: 'notes.txt', offset: 2 }, id: 'r2' },
      ],
    },
    { toolCall: { name: 'read', arguments: {}, id: 'bad1' } },
    {
      toolCalls: [
        { name: 'read', arguments: { path: 7, limit: 'x' }, id: 'bad2' },
        { name: 'ls', arguments: { path: 'sub' }, id: 'l2' },
      ],
    },
    { toolCall: { name: 'stamp', arguments: {}, id: 's1' } },
    { toolCall: { name: 'lookup', arguments: { key: 'a' }, id: 'k1' } },
    { text: 'done' },
  ],
};
const TOOLS = ['read', 'ls', 'stamp', 'lookup'];

/** Idempotent, but not declared local: an activity in every placement. */
const stamp = defineTool({
  name: 'stamp',
  description: 'Says stamped.',
  parameters: { type: 'object', properties: {} },
  idempotent: true,
  execute: async () => ({ content: [{ type: 'text', text: 'stamped' }] }),
});

/** A user tool that declares the local placement (not worker-local: any worker may run it). */
function lookup(local: boolean): ToolDefinition {
  return defineTool({
    name: 'lookup',
    description: 'Looks a key up.',
    parameters: { type: 'object', properties: { key: { type: 'string' } }, required: ['key'] },
    idempotent: true,
    localActivity: local,
    execute: async (_id, args: { key: string }) => ({ content: [{ type: 'text', text: `value of ${args.key}` }] }),
  });
}

const { EventType } = temporal.api.enums.v1;

/** Each tool activity as `<activity type> <task queue>`, each local activity as `local <activity type>`. */
async function placements(h: AgentRunHandle): Promise<string[]> {
  const history = await h.workflow.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const s = e.activityTaskScheduledEventAttributes;
    if (s) return s.activityType?.name === 'callModel' ? [] : [`${s.activityType?.name} ${s.taskQueue?.name}`];
    const m = e.markerRecordedEventAttributes;
    if (m?.markerName !== 'core_local_activity') return [];
    const data = m.details?.data?.payloads?.[0];
    const marker = data ? defaultPayloadConverter.fromPayload<{ activity_type?: string }>(data) : {};
    return [`local ${marker.activity_type}${m.failure ? ` failed: ${m.failure.message}` : ''}`];
  });
}

async function patchesOf(h: AgentRunHandle): Promise<string[]> {
  const history = await h.workflow.fetchHistory();
  return (history.events ?? []).flatMap((e) => {
    const m = e.markerRecordedEventAttributes;
    if (e.eventType !== EventType.EVENT_TYPE_MARKER_RECORDED || m?.markerName !== 'core_patch') return [];
    const data = m.details?.['patch-data']?.payloads?.[0];
    return data ? [defaultPayloadConverter.fromPayload<{ id: string }>(data).id] : [];
  });
}

/** Replays the run's history with the current workflow code (a nondeterminism throws). */
async function replays(h: AgentRunHandle): Promise<void> {
  const history = await h.workflow.fetchHistory();
  await Worker.runReplayHistory({ workflowBundle: { codePath: inject('workflowBundlePath') } }, history);
}

/**
 * The notation with each run of consecutive `TEE(…)` sorted: a parallel batch emits `tool_execution_end` in
 * completion order, which is a race in either placement.
 */
function inBatchOrder(events: string[]): string[] {
  const out: string[] = [];
  let run: string[] = [];
  for (const e of [...events, '']) {
    if (e.startsWith('TEE(')) run.push(e);
    else {
      out.push(...run.sort());
      run = [];
      if (e) out.push(e);
    }
  }
  return out;
}

describe('local placement of read-only tools', () => {
  const dirs: string[] = [];
  const workers: Keel[] = [];
  let ws: string;
  let on: Keel;
  let off: Keel;
  let localRun: AgentRunHandle;
  let activityRun: AgentRunHandle;

  beforeAll(async () => {
    ws = realpathSync(mkdtempSync(join(tmpdir(), 'keel-local-')));
    dirs.push(ws);
    writeFileSync(join(ws, 'notes.txt'), 'one\ntwo\nthree\n');
    mkdirSync(join(ws, 'sub'));
    writeFileSync(join(ws, 'sub', 'a.txt'), 'a');
    on = await startKeel({
      tools: [...builtinTools({ cwd: ws, localReadTools: true }), stamp, lookup(true)],
      scripts: { reader: script },
    });
    off = await startKeel({ tools: [...builtinTools({ cwd: ws }), stamp, lookup(false)], scripts: { reader: script } });
    workers.push(on, off);
    const input = { model: 'scripted/reader', prompt: 'look around', tools: TOOLS };
    [localRun, activityRun] = await Promise.all([on.start(input), off.start(input)]);
    await Promise.all([localRun.result(), activityRun.result()]);
  }, 60_000);

  afterAll(async () => {
    for (const k of workers) await k.stop().catch(() => {});
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('runs read, ls, their batch preparation and a declared user tool as local activities; others as activities', async () => {
    const home = on.worker.homeQueue()!;
    expect(await placements(localRun)).toEqual([
      `startRun ${on.taskQueue}`,
      'local runToolCall', // read notes.txt
      'local prepareToolCalls', // ls + read
      'local executeToolCall',
      'local executeToolCall',
      'local runToolCall', // read without path: the validation error
      'local prepareToolCalls', // bad read + ls
      'local executeToolCall', // only ls runs
      // stamp: not declared local; on the run's own task queue, as an `all` worker started the run
      // (keel-0.8-tools-on-run-queue; was the tool queue, keel-0.4.2-tool-queue)
      `runToolCall ${on.taskQueue}`,
      'local runToolCall', // lookup
    ]);
    // the local placement (0.4.0) and the tool queue (0.4.2) implied by the run's one marker (0.13.0)
    expect(await patchesOf(localRun)).toEqual([PATCH.impliesEarlier]);
    const offHome = off.worker.homeQueue()!;
    expect(await placements(activityRun)).toEqual([
      `startRun ${off.taskQueue}`,
      `runToolCall ${offHome}`,
      `prepareToolCalls ${off.taskQueue}-tools`,
      `executeToolCall ${offHome}`,
      `executeToolCall ${offHome}`,
      `runToolCall ${offHome}`,
      `prepareToolCalls ${off.taskQueue}-tools`,
      `executeToolCall ${offHome}`,
      `runToolCall ${off.taskQueue}`, // stamp and lookup: not worker-local, on the run's task queue (0.8.0)
      `runToolCall ${off.taskQueue}`,
    ]);
    expect(await patchesOf(activityRun)).toEqual([PATCH.impliesEarlier]);
    expect(home).not.toBe(offHome);
  });

  it('gives exactly the transcript and the events of the same run with the placement off', async () => {
    const [local, activity] = await Promise.all([localRun.allMessages(), activityRun.allMessages()]);
    expect(strip(local)).toEqual(strip(activity));
    expect(local.length).toBe(16);
    const [le, ae] = await Promise.all([allEvents(localRun), allEvents(activityRun)]);
    expect(inBatchOrder(notation(le))).toEqual(inBatchOrder(notation(ae)));
    // by call id: within a parallel batch they come in completion order
    const ends = (events: typeof le) =>
      events
        .flatMap((e) => (e.type === 'tool_execution_end' ? [{ id: e.toolCallId, r: e.result, err: e.isError }] : []))
        .sort((a, b) => a.id.localeCompare(b.id));
    expect(ends(le)).toEqual(ends(ae));
  });

  it('gives the same error results for bad arguments', async () => {
    const results = (await localRun.allMessages()).flatMap((m) => (m.role === 'toolResult' ? [m] : []));
    const bad = results.filter((m) => m.toolCallId.startsWith('bad'));
    expect(bad.map((m) => m.isError)).toEqual([true, true]);
    for (const m of bad)
      expect(m.content).toEqual([{ type: 'text', text: expect.stringContaining('Validation failed') }]);
    const byId = Object.fromEntries(results.map((m) => [m.toolCallId, m.content]));
    expect(byId.r1).toEqual([{ type: 'text', text: 'one\ntwo\nthree\n' }]);
    expect(byId.l2).toEqual([{ type: 'text', text: 'a.txt' }]);
    expect(byId.s1).toEqual([{ type: 'text', text: 'stamped' }]);
    expect(byId.k1).toEqual([{ type: 'text', text: 'value of a' }]);
  });

  it('runs worker-local calls on the home queue when the workflow runs on another worker', async () => {
    // `elsewhere` is the run's home (its startRun answer is rewritten to name it); the workflow runs on `runner`
    const elsewhere = await startKeel({ tools: builtinTools({ cwd: ws, localReadTools: true }), scripts: {} });
    workers.push(elsewhere);
    await until(() => elsewhere.worker.homeQueue() !== undefined, 20_000, 'the other home queue');
    const otherHome = elsewhere.worker.homeQueue()!;
    const rewriteHome: ActivityInterceptorsFactory = (ctx) => ({
      inbound: {
        async execute(input, next) {
          const out = await next(input);
          return ctx.info.activityType === 'startRun' ? { ...(out as object), homeQueue: otherHome } : out;
        },
      },
    });
    const runner = await startKeel({
      tools: builtinTools({ cwd: ws, localReadTools: true }),
      scripts: {
        reader: {
          replies: [
            { toolCall: { name: 'read', arguments: { path: 'notes.txt' }, id: 'r1' } },
            { toolCall: { name: 'read', arguments: { path: 'sub/a.txt' }, id: 'r2' } },
            { text: 'done' },
          ],
        },
      },
      workerOptions: { interceptors: { activity: [rewriteHome] } },
    });
    workers.push(runner);
    const h = await runner.start({ model: 'scripted/reader', prompt: 'read', tools: ['read'] });
    expect((await h.result()).status).toBe('completed');
    expect(await placements(h)).toEqual([
      `startRun ${runner.taskQueue}`,
      `local runToolCall failed: Tool call refused as a local activity: this worker's home queue is ${runner.worker.homeQueue()}, not ${otherHome}`,
      `runToolCall ${otherHome}`,
      `runToolCall ${otherHome}`, // no second try: this execution knows it is not on its home
    ]);
    const texts = (await h.allMessages()).flatMap((m) => (m.role === 'toolResult' ? [m.content] : []));
    expect(texts).toEqual([[{ type: 'text', text: 'one\ntwo\nthree\n' }], [{ type: 'text', text: 'a' }]]);
    await replays(h);
  }, 60_000);

  it('replays the histories with local-activity markers deterministically', async () => {
    await replays(localRun);
    await replays(activityRun);
  });
});

describe('local placement: an interrupt during a local call', () => {
  let keel: Keel;
  const started = gate();
  let aborted = 0;
  const NAP_MS = 1500;
  const nap = defineTool({
    name: 'nap',
    description: 'Naps 1.5 s.',
    parameters: { type: 'object', properties: {} },
    idempotent: true,
    localActivity: true,
    execute: (_id, _args, signal) =>
      new Promise<AgentToolResult>((resolve, reject) => {
        started.open();
        const t = setTimeout(() => resolve({ content: [{ type: 'text', text: 'slept' }] }), NAP_MS);
        signal.addEventListener('abort', () => {
          aborted += 1;
          clearTimeout(t);
          reject(new Error('nap aborted'));
        });
      }),
  });
  beforeAll(async () => {
    keel = await startKeel({
      tools: [nap],
      scripts: {
        napper: {
          rules: [
            // streamed slowly: the interrupt, seen once the call is done, finds this model call running
            { match: 'toolResult:nap', text: 'after the nap, slowly', chunkDelayMs: 400 },
            { toolCall: { name: 'nap', arguments: {}, id: 'n1' } },
          ],
        },
      },
    });
  });
  afterAll(() => keel?.stop());

  it('takes effect after the call: the call finishes with its own result, the next model call is aborted', async () => {
    const h = await keel.start({ model: 'scripted/napper', prompt: 'nap', tools: ['nap'], mode: 'session' });
    await started.promise;
    const t0 = Date.now();
    const ack = await h.interrupt();
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
    expect(ack).toEqual({ interrupted: true, next: 'waits' });
    expect(Date.now() - t0).toBeGreaterThan(NAP_MS / 2); // the interrupt waited for the call
    expect(aborted).toBe(0);
    const messages = strip(await h.allMessages());
    expect(messages.slice(2)).toEqual([
      // the call was not cut short: its own result
      {
        role: 'toolResult',
        toolCallId: 'n1',
        toolName: 'nap',
        content: [{ type: 'text', text: 'slept' }],
        isError: false,
      },
      // the interrupt stopped what ran when the workflow saw it: the next model call
      {
        role: 'assistant',
        content: [{ type: 'text', text: expect.any(String) }],
        stopReason: 'aborted',
        errorMessage: 'Operation aborted',
      },
    ]);
  });
});

describe('local placement: a call that waits for approval', () => {
  let keel: Keel;
  const stampLocal = defineTool({
    name: 'stamp_local',
    description: 'Says stamped, once approved.',
    parameters: { type: 'object', properties: { what: { type: 'string' } }, required: ['what'] },
    idempotent: true,
    localActivity: true,
    approval: 'always',
    execute: async (_id, args: { what: string }) => ({ content: [{ type: 'text', text: `stamped ${args.what}` }] }),
  });
  beforeAll(async () => {
    keel = await startKeel({
      tools: [stampLocal],
      scripts: {
        stamper: {
          rules: [
            { match: 'toolResult:stamp_local', text: 'stamped' },
            { toolCall: { name: 'stamp_local', arguments: { what: 'it' }, id: 'a1' } },
          ],
        },
      },
    });
  });
  afterAll(() => keel?.stop());

  it('is prepared by one local activity and, once approved, executed by another', async () => {
    const h = await keel.start({ model: 'scripted/stamper', prompt: 'stamp', tools: ['stamp_local'] });
    await until(async () => (await h.state()).pendingApprovals.length === 1, 20_000, 'pending approval');
    const [p] = (await h.state()).pendingApprovals;
    await h.approve({ toolCallId: p.toolCallId, argsDigest: p.argsDigest, approver: 'alice' });
    expect((await h.result()).status).toBe('completed');
    const result = (await h.allMessages()).find((m) => m.role === 'toolResult');
    expect(result?.content).toEqual([{ type: 'text', text: 'stamped it' }]);
    expect(await placements(h)).toEqual([`startRun ${keel.taskQueue}`, 'local runToolCall', 'local executeToolCall']);
    await replays(h);
  });
});

describe('defineTool and localActivity', () => {
  it('refuses localActivity without idempotent', () => {
    expect(() =>
      defineTool({
        name: 'x',
        description: 'x',
        parameters: { type: 'object' },
        localActivity: true,
        execute: async () => ({}),
      }),
    ).toThrow('defineTool(x): localActivity requires idempotent: true (a local activity may run twice)');
  });
});
