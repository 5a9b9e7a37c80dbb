/** Starting and timing runs: Keel runs, engine-floor runs, and small waiting helpers. */
import { randomUUID } from 'node:crypto';
import { type Client } from '@temporalio/client';
import { type AgentClient } from '../client/agent-client.js';
import type { AgentRunInput, AgentRunResult } from '../common/run.js';
import { QUEUE } from './fixtures.js';
import type { FloorOptions } from './floor-workflow.js';

export function keelInput(
  model: string,
  tools: string[],
  maxTurns: number,
  extra: Partial<AgentRunInput> = {},
): AgentRunInput {
  return { model: `scripted/${model}`, prompt: 'go', tools, maxTurns, ...extra };
}

/** A Keel run start → result, in ms (client-observed). */
export async function keelRun(
  agent: AgentClient,
  input: AgentRunInput,
): Promise<{ ms: number; workflowId: string; result: AgentRunResult }> {
  const workflowId = `bench-keel-${randomUUID()}`;
  const t = performance.now();
  const handle = await agent.start(input, { workflowId });
  const result = await handle.result();
  return { ms: performance.now() - t, workflowId, result };
}

export async function floorRun(
  client: Client,
  turns: number,
  opts: FloorOptions = {},
): Promise<{ ms: number; workflowId: string }> {
  const workflowId = `bench-floor-${randomUUID()}`;
  const t = performance.now();
  const handle = await client.workflow.start('floorWorkflow', {
    taskQueue: QUEUE.bench,
    workflowId,
    args: [turns, opts],
  });
  await handle.result();
  return { ms: performance.now() - t, workflowId };
}

/** Polls `fn` every 500 ms until it answers true; the first failure is logged, a timeout throws. */
export async function waitUntil(
  log: (line: string) => void,
  fn: () => Promise<boolean>,
  what: string,
  timeoutMs = 180_000,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let reported = false;
  const attempt = () =>
    fn().catch((err) => {
      if (!reported) log(`  (waiting for ${what}: ${err instanceof Error ? err.message : String(err)})`);
      reported = true;
      return false;
    });
  while (!(await attempt())) {
    if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

export async function pool<T, R>(items: T[], concurrency: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}
