/**
 * Fixtures of the budget tests (tree-budget, budget-batch, budget-crash-loop): usage figures, the `tick` tool, the
 * scripted replies that spend, and workers SIGKILLed while a model call streams.
 */
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defaultPayloadConverter } from '@temporalio/common';
import { inject } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import type { ModelHeartbeat } from '../../common/events.js';
import type { Usage } from '../../common/messages.js';
import { streamedText } from '../../common/model-heartbeat.js';
import { killWorker, spawnWorker } from './child-worker.js';
import { until } from './harness.js';

/** A scripted reply's usage: `totalTokens` input tokens. */
export const tokens = (totalTokens: number): Partial<Usage> => ({ input: totalTokens, totalTokens });

/** `tick({})`: returns `tock`. */
export const tickTool = defineTool({
  name: 'tick',
  description: 'Returns tock.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'tock' }] }),
});

/** The `maxTokens` of the runs that reserve: each request reserves its estimated context plus this. */
export const MAX_TOKENS = 500;

/** Three replies of 400 tokens (two ticks, then `done`): a run would spend 1200. */
export const three = {
  replies: [
    { toolCalls: [{ name: 'tick', arguments: {} }], usage: tokens(400) },
    { toolCalls: [{ name: 'tick', arguments: {} }], usage: tokens(400) },
    { text: 'done', usage: tokens(400) },
  ],
};

/** The heartbeat of the pending model call, when it has streamed. */
export async function streamed(h: AgentRunHandle): Promise<ModelHeartbeat | undefined> {
  const raw = (await h.workflow.describe()).raw;
  const payload = raw.pendingActivities?.find((a) => a.activityType?.name === 'callModel')?.heartbeatDetails
    ?.payloads?.[0];
  const d = payload ? (defaultPayloadConverter.fromPayload(payload as never) as ModelHeartbeat) : undefined;
  return d && streamedText(d) ? d : undefined;
}

/** The worker of the crash loops, in a child process (fixtures/child-worker.ts: `spender/<tokens>` and more). */
export const CHILD_WORKER = fileURLToPath(new URL('./fixtures/child-worker.ts', import.meta.url));

/**
 * The start of a crash loop: a task queue of its own (`<prefix>-<uuid>`), a client of it, and the first worker
 * (CHILD_WORKER with `env`: KEEL_HANG, its model calls never finish).
 */
export async function crashLoopStart(
  prefix: string,
): Promise<{ taskQueue: string; env: Record<string, string>; client: AgentClient; worker: ChildProcess }> {
  const taskQueue = `${prefix}-${randomUUID()}`;
  const env = {
    KEEL_TASK_QUEUE: taskQueue,
    KEEL_SIDE_EFFECTS: join(mkdtempSync(join(tmpdir(), `keel-${prefix}-`)), 'effects.log'),
    KEEL_HANG: '1',
  };
  const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
  return { taskQueue, env, client, worker: await spawnWorker(CHILD_WORKER, env) };
}

/**
 * A crash loop of `kills` workers: each time the model call of `h` streams on the running worker with the earlier
 * attempts' `perAttempt` tokens each in its heartbeat's `failedUsage`, `beforeKill(kill)` runs, the worker is
 * SIGKILLed and a new one (`fixture` with `env`) started. Resolves with the worker running at the end.
 */
export async function killWhileStreaming(
  h: AgentRunHandle,
  worker: ChildProcess,
  opts: {
    fixture: string;
    env: Record<string, string>;
    kills: number;
    perAttempt: number;
    beforeKill?: (kill: number) => Promise<void>;
  },
): Promise<ChildProcess> {
  for (let kill = 1; kill <= opts.kills; kill++) {
    await until(
      async () => {
        const beat = await streamed(h);
        return beat !== undefined && (beat.failedUsage?.totalTokens ?? 0) === opts.perAttempt * (kill - 1);
      },
      60_000,
      `attempt ${kill} streaming`,
      200,
    );
    await opts.beforeKill?.(kill);
    await killWorker(worker);
    worker = await spawnWorker(opts.fixture, opts.env);
  }
  return worker;
}
