/**
 * The worker-local tool ledger (worker/tool-ledger.ts): a tool call that finished on this worker but whose completion
 * never reached Temporal (simulated: the attempt hangs after the tool returned, as when Temporal is unreachable) is
 * retried by Temporal; the retry returns the recorded outcome and the tool does not run a second time. With worker
 * affinity this holds for a non-idempotent worker-local tool too: its retry goes to the same home worker.
 */
import { Context } from '@temporalio/activity';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { startKeel, strip, type Keel } from './harness.js';

/** Attempt 1 of a tool activity never reports: after the tool returned it waits until the worker cancels it. */
const loseFirstCompletion: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    async execute(input, next) {
      const result = await next(input);
      if (ctx.info.activityType !== 'runToolCall' || ctx.info.attempt > 1) return result;
      await new Promise((_resolve, reject) =>
        ctx.cancellationSignal.addEventListener('abort', () => reject(ctx.cancellationSignal.reason)),
      );
      return result;
    },
  },
});

describe('tool ledger', () => {
  const executions: string[] = [];
  const fetchPage = defineTool<{ url: string }>({
    name: 'fetch_page',
    description: 'Fetches a page.',
    parameters: { type: 'object', properties: { url: { type: 'string' } }, required: ['url'] },
    idempotent: true,
    retry: { initialInterval: '100ms' },
    async execute(_id, args, _signal, _onUpdate, ctx) {
      executions.push(`${ctx.idempotencyKey} attempt ${ctx.attempt}`);
      return { content: [{ type: 'text', text: `page ${args.url} (attempt ${Context.current().info.attempt})` }] };
    },
  });
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      tools: [fetchPage],
      scripts: {
        fetch: {
          replies: [
            { toolCall: { name: 'fetch_page', arguments: { url: 'https://example.test' }, id: 'f1' } },
            { text: 'fetched' },
          ],
        },
      },
      workerOptions: { interceptors: { activity: [loseFirstCompletion] } },
    });
  });
  afterAll(() => keel?.stop());

  it('a retried call that already finished here returns the recorded outcome without running again', async () => {
    const h = await keel.start({
      model: 'scripted/fetch',
      prompt: 'fetch it',
      tools: ['fetch_page'],
      heartbeatTimeout: '1s',
    });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(executions).toEqual([`${h.workflowId}/f1 attempt 1`]);
    expect(strip(r.newMessages.slice(2))).toEqual([
      {
        role: 'toolResult',
        toolCallId: 'f1',
        toolName: 'fetch_page',
        content: [{ type: 'text', text: 'page https://example.test (attempt 1)' }],
        isError: false,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'fetched' }], stopReason: 'stop' },
    ]);
    // Temporal did dispatch the call a second time
    const history = await h.workflow.fetchHistory();
    const attempts = history.events
      ?.filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => e.activityTaskStartedEventAttributes!.attempt);
    expect(attempts).toContain(2);
  });
});

describe('tool ledger with worker affinity', () => {
  const executions: string[] = [];
  const deploy = defineTool<{ target: string }>({
    name: 'deploy',
    description: 'Deploys from this machine.',
    parameters: { type: 'object', properties: { target: { type: 'string' } }, required: ['target'] },
    workerLocal: true, // not idempotent
    async execute(_id, args, _signal, _onUpdate, ctx) {
      executions.push(`${ctx.idempotencyKey} attempt ${ctx.attempt}`);
      return {
        content: [{ type: 'text', text: `deployed ${args.target} (attempt ${Context.current().info.attempt})` }],
      };
    },
  });
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      tools: [deploy],
      scripts: {
        deploy: {
          replies: [{ toolCall: { name: 'deploy', arguments: { target: 'prod' }, id: 'd1' } }, { text: 'deployed' }],
        },
      },
      workerOptions: { interceptors: { activity: [loseFirstCompletion] } },
    });
  });
  afterAll(() => keel?.stop());

  it('a non-idempotent call that finished on its home worker is answered from the ledger, not run again', async () => {
    const h = await keel.start({
      model: 'scripted/deploy',
      prompt: 'deploy',
      tools: ['deploy'],
      heartbeatTimeout: '1s',
    });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(executions).toEqual([`${h.workflowId}/d1 attempt 1`]);
    expect(strip(r.newMessages.slice(2))).toEqual([
      {
        role: 'toolResult',
        toolCallId: 'd1',
        toolName: 'deploy',
        content: [{ type: 'text', text: 'deployed prod (attempt 1)' }],
        isError: false,
      },
      { role: 'assistant', content: [{ type: 'text', text: 'deployed' }], stopReason: 'stop' },
    ]);
    // both attempts went to the worker's own task queue
    const history = await h.workflow.fetchHistory();
    const events = history.events ?? [];
    const scheduled = events.flatMap((e) => {
      const a = e.activityTaskScheduledEventAttributes;
      return a?.activityType?.name === 'runToolCall' ? [a.taskQueue?.name] : [];
    });
    expect(scheduled).toEqual([keel.worker.homeQueue()]);
    const attempts = events.flatMap((e) => e.activityTaskStartedEventAttributes?.attempt ?? []);
    expect(attempts).toContain(2);
  });
});
