/**
 * The run API for other services (README "A run API for other services"): "send a message to conversation X, creating
 * it if needed" with update-with-start and a deterministic workflow id; `AgentClient.get`; the typed batch API.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InvalidAgentInputError } from '../../client/agent-client.js';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { startKeel, strip, until, workflowTaskFailures, type Keel } from './harness.js';

const scripts = {
  support: {
    rules: [
      { match: 'refund', text: 'Refund started.' },
      { match: 'order', text: 'Which order?' },
      { match: 'task', text: 'task done', usage: { input: 2, output: 1, totalTokens: 3 } },
    ],
  },
};
const user = (text: string) => ({ role: 'user', content: [{ type: 'text', text }] });
const reply = (text: string) => ({ role: 'assistant', content: [{ type: 'text', text }], stopReason: 'stop' });

describe('a run API for other services', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts });
  });
  afterAll(() => keel?.stop());

  it('sendToConversation creates the conversation on the first message and queues the next ones: one run, whole transcript', async () => {
    const conversation = `conversation-${randomUUID()}`; // e.g. derived from the service's own conversation id
    const first = await keel.client.sendToConversation(conversation, 'Where is my order?', {
      model: 'scripted/support',
      idleTimeout: '5m',
    });
    expect(first.ack).toEqual({ queued: { steering: 0, followUp: 1 } });
    const h = keel.client.get(conversation);
    await until(
      async () => (await h.state()).status === 'waiting' && (await h.state()).runs === 1,
      20_000,
      'first reply',
    );
    const second = await keel.client.sendToConversation(conversation, 'Please refund it', {
      model: 'scripted/support',
      idleTimeout: '5m',
    });
    expect(second.ack).toEqual({ queued: { steering: 0, followUp: 1 } });
    await until(
      async () => (await h.state()).status === 'waiting' && (await h.state()).runs === 2,
      20_000,
      'second reply',
    );
    expect(await h.end()).toEqual({ status: 'completed' });
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      user('Where is my order?'),
      reply('Which order?'),
      user('Please refund it'),
      reply('Refund started.'),
    ]);
    const runs: string[] = [];
    for await (const w of keel.client.client.workflow.list({ query: `WorkflowId = '${conversation}'` }))
      runs.push(w.runId);
    expect(runs).toHaveLength(1);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('after the conversation has closed, the next message starts a new run under the same id with a fresh transcript', async () => {
    const conversation = `conversation-${randomUUID()}`;
    const opts = { model: 'scripted/support', idleTimeout: '5m' };
    const first = await keel.client.sendToConversation(conversation, 'Where is my order?', opts);
    await until(async () => (await first.handle.state()).status === 'waiting', 20_000, 'first reply');
    expect(await first.handle.end()).toEqual({ status: 'completed' });
    await first.handle.result();
    const next = await keel.client.sendToConversation(conversation, 'Please refund it', opts);
    expect(next.ack).toEqual({ queued: { steering: 0, followUp: 1 } });
    await until(async () => (await next.handle.state()).status === 'waiting', 20_000, 'reply in the new run');
    expect(strip(await next.handle.allMessages())).toEqual([user('Please refund it'), reply('Refund started.')]);
    expect(await next.handle.end()).toEqual({ status: 'completed' });
    // visibility is eventually consistent: the list catches up with both closes shortly after
    const runs = async () => {
      const names: string[] = [];
      for await (const w of keel.client.client.workflow.list({ query: `WorkflowId = '${conversation}'` }))
        names.push(w.status.name);
      return names;
    };
    await until(async () => (await runs()).join() === 'COMPLETED,COMPLETED', 20_000, 'both runs listed');
    expect(await runs()).toEqual(['COMPLETED', 'COMPLETED']);
  });

  it('signal-with-start from any SDK: followUp as the signal creates the conversation, the next one joins the same run', async () => {
    const conversation = `conversation-${randomUUID()}`;
    const send = (text: string) =>
      keel.client.client.workflow.signalWithStart('agentWorkflow', {
        workflowId: conversation,
        taskQueue: keel.taskQueue,
        args: [{ model: 'scripted/support', mode: 'session', idleTimeout: '5m' }],
        signal: 'followUp',
        signalArgs: [text],
      });
    const started = await send('Where is my order?');
    const h = keel.client.get(conversation);
    await until(async () => (await h.state()).runs === 1 && (await h.state()).status === 'waiting', 20_000, 'reply');
    const joined = await send('Please refund it');
    expect(joined.signaledRunId).toBe(started.signaledRunId);
    await until(async () => (await h.state()).runs === 2 && (await h.state()).status === 'waiting', 20_000, 'reply');
    expect(await h.end()).toEqual({ status: 'completed' });
    expect(strip((await h.result()).newMessages)).toEqual([
      user('Where is my order?'),
      reply('Which order?'),
      user('Please refund it'),
      reply('Refund started.'),
    ]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('the temporal CLI: start with --id-conflict-policy UseExisting (twice: one run), then the followUp Update answers', async () => {
    const bin = await ensureTemporalCli({ log: () => undefined });
    const temporal = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) =>
        execFile(bin, [...args, '--address', keel.address], { timeout: 60_000 }, (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        ),
      );
    const conversation = `conversation-${randomUUID()}`;
    const start = () =>
      temporal([
        'workflow',
        'start',
        '--type',
        'agentWorkflow',
        '--task-queue',
        keel.taskQueue,
        '--workflow-id',
        conversation,
        '--id-conflict-policy',
        'UseExisting',
        '--input',
        JSON.stringify({ model: 'scripted/support', mode: 'session', idleTimeout: '5m' }),
        '-o',
        'json',
      ]);
    const a = await start();
    expect(a.code, a.stderr).toBe(0);
    const b = await start();
    expect(b.code, b.stderr).toBe(0);
    expect(JSON.parse(b.stdout).runId).toBe(JSON.parse(a.stdout).runId);
    const sent = await temporal([
      'workflow',
      'update',
      'execute',
      '--workflow-id',
      conversation,
      '--name',
      'followUp',
      '--input',
      JSON.stringify('Where is my order?'),
      '-o',
      'json',
    ]);
    expect(sent.code, sent.stderr).toBe(0);
    expect(JSON.parse(sent.stdout).result).toEqual({ queued: { steering: 0, followUp: 1 } });
    const h = keel.client.get(conversation);
    await until(async () => (await h.state()).runs === 1 && (await h.state()).status === 'waiting', 20_000, 'reply');
    expect(await h.end()).toEqual({ status: 'completed' });
    expect(strip((await h.result()).newMessages)).toEqual([user('Where is my order?'), reply('Which order?')]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });

  it('a session started with neither prompt nor messages waits for its first message', async () => {
    const h = await keel.start({ model: 'scripted/support', mode: 'session' });
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
    expect((await h.state()).runs).toBe(0);
    await h.followUp('Where is my order?');
    await until(async () => (await h.state()).runs === 1 && (await h.state()).status === 'waiting', 20_000, 'reply');
    expect(strip(await h.allMessages())).toEqual([user('Where is my order?'), reply('Which order?')]);
    await h.end();
  });

  it('startBatch: progress, per-task outcomes, the summary and each task run', async () => {
    const bad = await keel.client
      .startBatch([{ model: 'scripted/support', prompt: 'task' }, { prompt: 'task' } as never])
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidAgentInputError);
    expect((bad as Error).message).toBe('Invalid AgentRunInput: task 1: model: is required');

    const batch = await keel.client.startBatch(
      Array.from({ length: 3 }, (_, i) => ({ model: 'scripted/support', prompt: `task ${i}` })),
      { batchId: `batch-api-${randomUUID()}`, concurrency: 2 },
    );
    const summary = await batch.result();
    expect(summary).toMatchObject({
      total: 3,
      done: 3,
      failed: 0,
      byStatus: { completed: 3 },
      tokens: 9,
      failures: [],
    });
    const again = keel.client.getBatch(batch.workflowId);
    expect((await again.results()).results.map((t) => [t.index, t.workflowId, t.status, t.tokens])).toEqual([
      [0, `${batch.workflowId}-0`, 'completed', 3],
      [1, `${batch.workflowId}-1`, 'completed', 3],
      [2, `${batch.workflowId}-2`, 'completed', 3],
    ]);
    expect(await again.progress()).toMatchObject({
      total: 3,
      done: 3,
      failed: 0,
      running: 0,
      queued: 0,
      phase: 'finished',
    });
    expect(strip((await batch.task(1).result()).newMessages)).toEqual([user('task 1'), reply('task done')]);
  });
});
