/**
 * Durability (docs/architecture.md#retries): kill the worker process (SIGKILL) while a tool or a model call runs, start a new worker,
 * and the run completes with no missing and no duplicated message; a non-idempotent tool is never run twice.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { killAllWorkers, killWorker, spawnWorker } from './child-worker.js';
import { strip, until, workflowTaskFailures } from './harness.js';

const CHILD = fileURLToPath(new URL('./fixtures/child-worker.ts', import.meta.url));
const startChild = (taskQueue: string, sideEffects: string, hang: boolean) =>
  spawnWorker(CHILD, { KEEL_TASK_QUEUE: taskQueue, KEEL_SIDE_EFFECTS: sideEffects, KEEL_HANG: hang ? '1' : '0' });
const kill = killWorker;

function lines(file: string): string[] {
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean) : [];
}

afterAll(killAllWorkers);

describe('durability: worker killed mid-activity', () => {
  const setup = async () => {
    const taskQueue = `durable-${randomUUID()}`;
    const sideEffects = join(mkdtempSync(join(tmpdir(), 'keel-durable-')), 'effects.log');
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    return { taskQueue, sideEffects, client };
  };

  it('a non-idempotent tool whose worker died is not run again and gets the interrupted text', async () => {
    const { taskQueue, sideEffects, client } = await setup();
    const first = await startChild(taskQueue, sideEffects, true);
    const h = await client.start({
      model: 'scripted/durable',
      prompt: 'launch it',
      tools: ['launch'],
      heartbeatTimeout: '2s',
    });
    await until(() => lines(sideEffects).length === 1, 30_000, 'tool started');
    await kill(first);
    const second = await startChild(taskQueue, sideEffects, false);
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(lines(sideEffects)).toHaveLength(1);
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'launch it' }] },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'tool-1', name: 'launch', arguments: { id: 'rocket' } }],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 'tool-1',
        toolName: 'launch',
        content: [
          {
            type: 'text',
            text: 'Tool launch was interrupted before it finished and was not retried because it is not idempotent. It may have partially run.',
          },
        ],
        details: {},
        isError: true,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'launch handled' }], stopReason: 'stop' },
    ]);
    await kill(second);
    await client.close();
  });

  it('an idempotent tool whose worker died is retried by Temporal on the new worker', async () => {
    const { taskQueue, sideEffects, client } = await setup();
    const first = await startChild(taskQueue, sideEffects, true);
    const h = await client.start({
      model: 'scripted/durable',
      prompt: 'fetch it',
      tools: ['fetch_page'],
      heartbeatTimeout: '2s',
    });
    await until(() => lines(sideEffects).length === 1, 30_000, 'tool started');
    await kill(first);
    const second = await startChild(taskQueue, sideEffects, false);
    const r = await h.result();
    // attempt 1 on the killed worker; retries handed to its dead poll time out; one attempt then succeeds on the new worker
    const effects = lines(sideEffects);
    expect(effects).toHaveLength(2);
    expect(effects[0]).toBe(`fetch https://example.test attempt 1 pid ${first.pid}`);
    expect(effects[1]).toMatch(new RegExp(`^fetch https://example.test attempt ([2-9]|\\d\\d+) pid ${second.pid}$`));
    expect(strip(r.newMessages.slice(2))).toEqual([
      {
        role: 'toolResult',
        toolCallId: 'tool-1',
        toolName: 'fetch_page',
        content: [{ type: 'text', text: 'page https://example.test' }],
        isError: false,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'fetch handled' }], stopReason: 'stop' },
    ]);
    await kill(second);
    await client.close();
  });

  it('a model call whose worker died is retried: exactly one assistant message for the turn', async () => {
    const { taskQueue, sideEffects, client } = await setup();
    const first = await startChild(taskQueue, sideEffects, true);
    const h = await client.start({ model: 'scripted/durable', prompt: 'stream please', heartbeatTimeout: '2s' });
    await until(
      async () =>
        (await h.workflow.describe()).raw.pendingActivities?.some(
          (a) => a.activityType?.name === 'callModel' && a.heartbeatDetails?.payloads?.length,
        ) ?? false,
      30_000,
      'model streaming',
    );
    await kill(first);
    const second = await startChild(taskQueue, sideEffects, false);
    const r = await h.result();
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'stream please' }] },
      { role: 'assistant', content: [{ type: 'text', text: 'streamed reply' }], stopReason: 'stop' },
    ]);
    await kill(second);
    await client.close();
  });

  it('a worker killed while an approval is pending: the new worker takes the approval, the call runs exactly once', async () => {
    const { taskQueue, sideEffects, client } = await setup();
    const first = await startChild(taskQueue, sideEffects, false);
    const h = await client.start({
      model: 'scripted/durable',
      prompt: 'guard it',
      tools: ['guarded'],
      heartbeatTimeout: '2s',
    });
    await until(async () => (await h.state()).pendingApprovals.length === 1, 30_000, 'approval pending');
    const [p] = (await h.state()).pendingApprovals;
    await kill(first);
    const second = await startChild(taskQueue, sideEffects, false);
    expect(lines(sideEffects)).toEqual([]);
    const record = await h.approve({ toolCallId: 'tool-1', argsDigest: p.argsDigest, approver: 'oncall' });
    const r = await h.result();
    expect(lines(sideEffects)).toEqual([`guarded vault attempt 1 pid ${second.pid}`]);
    expect(strip(r.newMessages)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'guard it' }] },
      {
        role: 'assistant',
        content: [{ type: 'toolCall', id: 'tool-1', name: 'guarded', arguments: { id: 'vault' } }],
        stopReason: 'toolUse',
      },
      {
        role: 'toolResult',
        toolCallId: 'tool-1',
        toolName: 'guarded',
        content: [{ type: 'text', text: 'opened vault' }],
        details: { approval: record },
        isError: false,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'guard handled' }], stopReason: 'stop' },
    ]);
    expect(await workflowTaskFailures(h)).toEqual([]);
    await kill(second);
    await client.close();
  });
});
