/**
 * Where a run's tool calls go (issue 35 item 2, patch `keel-0.8-tools-on-run-queue`): a run started by a worker with
 * role `all` schedules its tool calls on its own task queue, where the server dispatches them eagerly to the worker
 * completing the workflow task (no second queue's matching per call); a worker with role `model` that gets one there
 * refuses it before anything runs, and the call — and the run's later ones — go to `<taskQueue>-tools`. Runs started
 * by a `model` worker keep their tools on the tool queue (test/temporal/worker-roles.test.ts, unchanged).
 */
import { randomUUID } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import { ErrorType } from '../../common/errors.js';
import { toolTaskQueue, type WorkerRole } from '../../common/task-queues.js';
import { PATCH } from '../../workflows/patches.js';
import { createAgentWorker, type AgentWorker } from '../../worker/create-worker.js';

const { EventType } = temporal.api.enums.v1;
type Event = temporal.api.history.v1.IHistoryEvent;

let ran = 0;
const noop = defineTool({
  name: 'noop',
  description: 'Does nothing.',
  parameters: { type: 'object', properties: {} },
  execute: async () => {
    ran += 1;
    return { content: [{ type: 'text', text: 'ok' }] };
  },
});

const cleanup: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c().catch(() => undefined);
});

/** A worker of `role` on `taskQueue` (unversioned: the workers of one test share the queue), polling until stopped. */
async function worker(taskQueue: string, role: WorkerRole): Promise<AgentWorker> {
  const w = await createAgentWorker({
    address: inject('temporalAddress'),
    taskQueue,
    role,
    versioning: false,
    tools: [noop],
    models: { scripted: scriptedModel({ noop: { rules: [{ toolCall: { name: 'noop', arguments: {} } }] } }) },
    ...(role === 'tools' ? {} : { workflowBundle: { codePath: inject('workflowBundlePath') } }),
  });
  const running = w.run();
  running.catch(() => {});
  cleanup.push(() => w.shutdown());
  return w;
}

async function client(taskQueue: string): Promise<AgentClient> {
  const c = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
  cleanup.push(() => c.close());
  return c;
}

/** The task queue and outcome of every tool-call activity of a history, in order. */
function toolCalls(events: Event[]): { queue: string; failed?: string }[] {
  const byId = new Map<number, { queue: string; failed?: string }>();
  const out: { queue: string; failed?: string }[] = [];
  for (const e of events) {
    const s = e.activityTaskScheduledEventAttributes;
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED && s?.activityType?.name === 'runToolCall') {
      const call = { queue: s.taskQueue?.name ?? '' };
      byId.set(Number(e.eventId), call);
      out.push(call);
    }
    const f = e.activityTaskFailedEventAttributes;
    if (e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED && f) {
      const call = byId.get(Number(f.scheduledEventId));
      if (call)
        call.failed = f.failure?.cause?.applicationFailureInfo?.type ?? f.failure?.applicationFailureInfo?.type ?? '?';
    }
  }
  return out;
}

function patchMarkers(events: Event[]): string[] {
  return events.flatMap((e) => {
    const m = e.markerRecordedEventAttributes;
    if (e.eventType !== EventType.EVENT_TYPE_MARKER_RECORDED || m?.markerName !== 'core_patch') return [];
    const data = m.details?.['patch-data']?.payloads?.[0];
    return data ? [defaultPayloadConverter.fromPayload<{ id: string }>(data).id] : [];
  });
}

describe('tool calls on the run queue', () => {
  it("an all worker's run schedules its tool calls on its own task queue (eager dispatch, no second queue)", async () => {
    const taskQueue = `tq-${randomUUID()}`;
    await worker(taskQueue, 'all');
    const c = await client(taskQueue);
    const h = await c.start({ model: 'scripted/noop', prompt: 'go', tools: ['noop'], maxTurns: 3 });
    const r = await h.result();
    expect([r.status, r.turns]).toEqual(['stopped', 3]);
    const events = (await h.workflow.fetchHistory()).events ?? [];
    expect(toolCalls(events)).toEqual([{ queue: taskQueue }, { queue: taskQueue }, { queue: taskQueue }]);
    // the tools-on-run-queue path (0.8.0) implied by the run's one marker (0.13.0), recorded at its start
    expect(patchMarkers(events)).toEqual([PATCH.impliesEarlier]);
  });

  it('a model worker refuses a call placed there: it runs on the tool queue, and so do the later ones', async () => {
    const taskQueue = `tq-${randomUUID()}`;
    const all = await worker(taskQueue, 'all');
    const c = await client(taskQueue);
    const h = await c.start({ model: 'scripted/noop', prompt: 'go', tools: ['noop'], maxTurns: 1, mode: 'session' });
    await expect.poll(async () => (await h.state()).status, { timeout: 20_000 }).toBe('waiting');
    await all.shutdown(); // the run's next workflow tasks go to a model worker, its tools to a tools worker
    await worker(taskQueue, 'model');
    await worker(taskQueue, 'tools');
    const before = ran;
    await h.followUp('again');
    await expect.poll(async () => (await h.state()).turns, { timeout: 30_000 }).toBe(2);
    await h.followUp('and again');
    await expect.poll(async () => (await h.state()).turns, { timeout: 30_000 }).toBe(3);
    await h.end();
    const r = await h.result();
    expect(r.newMessages.filter((m) => m.role === 'toolResult').map((m) => m.isError)).toEqual([false, false, false]);
    expect(ran - before).toBe(2); // the refused call never ran: each call ran once
    const events = (await h.workflow.fetchHistory()).events ?? [];
    expect(toolCalls(events)).toEqual([
      { queue: taskQueue },
      { queue: taskQueue, failed: ErrorType.NotHome },
      { queue: toolTaskQueue(taskQueue) },
      { queue: toolTaskQueue(taskQueue) },
    ]);
  });
});
