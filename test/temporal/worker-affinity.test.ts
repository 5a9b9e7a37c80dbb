/**
 * Worker affinity (README "Worker affinity"): a run's worker-local tools (the built-in file tools, bash) run on one
 * worker, its home, through that worker's own task queue. Workers on one task queue, each with its own workspace
 * directory (two at first, more later): `write` then `read` land on the home worker's directory; once the home
 * worker is stopped, the run moves at its next tool call (an idempotent `read` is retried on the new home, a
 * non-idempotent `bash` gets the interrupted result, two parallel calls that lose the home together make one move)
 * and says so in its events and current details.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { afterAll, describe, expect, it, onTestFinished } from 'vitest';
import { builtinTools } from '../../activities/tools/builtin/index.js';
import type { Script } from '../../activities/model/scripted.js';
import { homeWorkerLost, toolInterrupted } from '../../common/errors.js';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import { allEvents, startKeel, strip, until, workflowTaskFailures, type Keel } from './harness.js';

const script: Script = {
  replies: [
    { toolCall: { name: 'write', arguments: { path: 'note.txt', content: 'written at home' }, id: 'w1' } },
    { toolCall: { name: 'read', arguments: { path: 'note.txt' }, id: 'r1' } },
    { text: 'read it' },
    { toolCall: { name: 'read', arguments: { path: 'note.txt' }, id: 'r2' } },
    { text: 'not there' },
    { toolCall: { name: 'bash', arguments: { command: 'echo ran' }, id: 'b1' } },
    { text: 'interrupted' },
    {
      toolCalls: [
        { name: 'read', arguments: { path: 'note.txt' }, id: 'r3' },
        { name: 'read', arguments: { path: 'other.txt' }, id: 'r4' },
      ],
    },
    { text: 'twice' },
  ],
};

describe('worker affinity', () => {
  const dirs: string[] = [];
  const workers: Keel[] = [];
  const taskQueue = `affinity-${randomUUID()}`;
  afterAll(async () => {
    for (const k of workers) await k.stop().catch(() => {});
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  async function worker(name: string): Promise<{ keel: Keel; dir: string; home: string }> {
    const dir = mkdtempSync(join(tmpdir(), `keel-affinity-${name}-`));
    dirs.push(dir);
    const keel = await startKeel({
      taskQueue,
      tools: builtinTools({ cwd: dir }),
      scripts: { home: script },
      workerOptions: { identity: `affinity-${name}` },
    });
    workers.push(keel);
    await until(() => keel.worker.homeQueue() !== undefined, 20_000, `${name}'s home queue`);
    return { keel, dir, home: keel.worker.homeQueue()! };
  }

  /** Waits until the session is idle with `count` messages. */
  const idleAt = (h: AgentRunHandle, count: number) =>
    until(
      async () => {
        const st = await h.state();
        return st.status === 'waiting' && st.messageCount === count;
      },
      60_000,
      `${count} messages, waiting`,
      100,
    );

  it('keeps a run on its home worker, and moves it when that worker is gone', async () => {
    // two workers on the task queue, each with its own workspace: either may become the run's home
    const w1 = await worker('a');
    const w2 = await worker('b');
    expect(w1.home).toMatch(new RegExp(`^${taskQueue}:home:affinity-a:[0-9a-f]{8}$`));
    expect(w2.home).toMatch(new RegExp(`^${taskQueue}:home:affinity-b:[0-9a-f]{8}$`));
    const client = await AgentClient.connect({ address: w1.keel.address, taskQueue });
    onTestFinished(() => client.close());
    const h = await client.start(
      {
        model: 'scripted/home',
        prompt: 'write a note',
        tools: ['write', 'read', 'bash'],
        mode: 'session',
        homeWorkerTimeout: '2s',
      },
      { workflowId: `affinity-${randomUUID()}` },
    );
    await idleAt(h, 6);
    const home = (await h.workflow.fetchHistory()).events?.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'runToolCall',
    )?.activityTaskScheduledEventAttributes?.taskQueue?.name;
    const [a, b] = home === w1.home ? [w1, w2] : [w2, w1];
    expect(home).toBe(a.home);
    // the write and the read (whose result below is the note) both ran in the home worker's workspace
    expect(readdirSync(a.dir)).toEqual(['note.txt']);
    expect(readdirSync(b.dir)).toEqual([]);

    // the home worker goes away; the next read is retried on the new home, whose workspace has no note
    await a.keel.stop();
    await h.followUp('read it again');
    await idleAt(h, 10);
    expect(readdirSync(b.dir)).toEqual([]);
    const movedToB = homeWorkerLost('read', a.home, '2s', b.home);
    const meta = (await h.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(meta.currentDetails).toContain(`⚠ ${movedToB}`);

    // again, with a non-idempotent call: it is not retried on the new home
    const c = await worker('c');
    await b.keel.stop();
    await h.followUp('run it');
    await idleAt(h, 14);
    const movedToC = homeWorkerLost('bash', b.home, '2s', c.home);
    const meta2 = (await h.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(meta2.currentDetails).toContain(`⚠ ${movedToC}`);
    expect(meta2.currentDetails).not.toContain(movedToB);

    // two calls of a parallel batch lose their home together: one move, both retried on the new home
    const d = await worker('d');
    await c.keel.stop();
    await h.followUp('read twice');
    await idleAt(h, 19);
    const movedToD = homeWorkerLost('read', c.home, '2s', d.home);

    const messages = strip(await h.allMessages());
    expect(messages.slice(1)).toEqual([
      {
        role: 'assistant',
        content: [toolCall('w1', 'write', { path: 'note.txt', content: 'written at home' })],
        stopReason: 'toolUse',
      },
      toolResult('w1', 'write', 'Successfully wrote 15 bytes to note.txt'),
      { role: 'assistant', content: [toolCall('r1', 'read', { path: 'note.txt' })], stopReason: 'toolUse' },
      toolResult('r1', 'read', 'written at home'),
      { role: 'assistant', content: [{ type: 'text', text: 'read it' }], stopReason: 'stop' },
      { role: 'user', content: [{ type: 'text', text: 'read it again' }] },
      { role: 'assistant', content: [toolCall('r2', 'read', { path: 'note.txt' })], stopReason: 'toolUse' },
      toolResult('r2', 'read', `ENOENT: no such file or directory, access '${join(b.dir, 'note.txt')}'`, true),
      { role: 'assistant', content: [{ type: 'text', text: 'not there' }], stopReason: 'stop' },
      { role: 'user', content: [{ type: 'text', text: 'run it' }] },
      { role: 'assistant', content: [toolCall('b1', 'bash', { command: 'echo ran' })], stopReason: 'toolUse' },
      toolResult('b1', 'bash', toolInterrupted('bash'), true),
      { role: 'assistant', content: [{ type: 'text', text: 'interrupted' }], stopReason: 'stop' },
      { role: 'user', content: [{ type: 'text', text: 'read twice' }] },
      {
        role: 'assistant',
        content: [toolCall('r3', 'read', { path: 'note.txt' }), toolCall('r4', 'read', { path: 'other.txt' })],
        stopReason: 'toolUse',
      },
      toolResult('r3', 'read', `ENOENT: no such file or directory, access '${join(d.dir, 'note.txt')}'`, true),
      toolResult('r4', 'read', `ENOENT: no such file or directory, access '${join(d.dir, 'other.txt')}'`, true),
      { role: 'assistant', content: [{ type: 'text', text: 'twice' }], stopReason: 'stop' },
    ]);
    const rehomed = (await allEvents(h)).filter((e) => e.type === 'worker_rehomed');
    expect(rehomed.map(({ seq: _s, ...e }) => e)).toEqual([
      { type: 'worker_rehomed', toolCallId: 'r2', toolName: 'read', from: a.home, to: b.home, text: movedToB },
      { type: 'worker_rehomed', toolCallId: 'b1', toolName: 'bash', from: b.home, to: c.home, text: movedToC },
      {
        type: 'worker_rehomed',
        toolCallId: expect.stringMatching(/^r[34]$/), // whichever of the two noticed the lost home first
        toolName: 'read',
        from: c.home,
        to: d.home,
        text: movedToD,
      },
    ]);

    expect((await h.end()).status).toBe('completed');
    const { EventType, TimeoutType } = temporal.api.enums.v1;
    const history = await h.workflow.fetchHistory();
    const scheduled = (history.events ?? [])
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => {
        const s = e.activityTaskScheduledEventAttributes!;
        return `${s.activityType?.name} ${s.taskQueue?.name}`;
      });
    expect(scheduled).toEqual([
      `startRun ${taskQueue}`,
      `callModel ${taskQueue}`,
      `runToolCall ${a.home}`,
      `callModel ${taskQueue}`,
      `runToolCall ${a.home}`,
      `callModel ${taskQueue}`,
      `callModel ${taskQueue}`,
      `runToolCall ${a.home}`, // never started: a is gone
      `workerHome ${taskQueue}-tools`,
      `runToolCall ${b.home}`,
      `callModel ${taskQueue}`,
      `callModel ${taskQueue}`,
      `runToolCall ${b.home}`, // never started: b is gone
      `workerHome ${taskQueue}-tools`,
      `callModel ${taskQueue}`,
      `callModel ${taskQueue}`,
      `prepareToolCalls ${taskQueue}-tools`,
      `executeToolCall ${c.home}`, // never started: c is gone
      `executeToolCall ${c.home}`, // never started: c is gone
      `workerHome ${taskQueue}-tools`, // once for both
      `executeToolCall ${d.home}`,
      `executeToolCall ${d.home}`,
      `callModel ${taskQueue}`,
    ]);
    const timedOut = (history.events ?? [])
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT)
      .map((e) => e.activityTaskTimedOutEventAttributes!.failure?.timeoutFailureInfo?.timeoutType);
    expect(timedOut).toEqual(Array(4).fill(TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_START));
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});

function toolCall(id: string, name: string, args: Record<string, unknown>) {
  return { type: 'toolCall', id, name, arguments: args };
}

function toolResult(id: string, name: string, text: string, isError = false) {
  const result = { role: 'toolResult', toolCallId: id, toolName: name, content: [{ type: 'text', text }], isError };
  return isError ? { ...result, details: {} } : result;
}
