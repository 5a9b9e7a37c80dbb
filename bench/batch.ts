/**
 * Section 7 of the bench: a batch of one-turn tasks through `agentBatchWorkflow` against the same tasks started
 * directly by a client at the same concurrency (a client-side sliding window: the next run starts when one ends), on
 * the same worker process. Also how many children were running across each of the batch's continues-as-new (from the
 * children's start and close times): a batch that drains before continuing-as-new has none there.
 * Environment: BENCH_BATCH_TASKS (default 2000), BENCH_BATCH_CONCURRENCY (default 20).
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import protoModule from '@temporalio/proto';
import { startBatchWorkflow } from '../client/batch-client.js';
import type { AgentBatchResult } from '../workflows/batch/definitions.js';
import { QUEUE } from './fixtures.js';
import { fetchChain } from './history.js';
import { keelInput, pool } from './runs.js';
import type { Bench } from './context.js';

const TASKS = Math.max(1, Number(process.env.BENCH_BATCH_TASKS ?? 2000));
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_BATCH_CONCURRENCY ?? 20));
const E = protoModule.temporal.api.enums.v1.EventType;

export async function batchSection(b: Bench) {
  const { log, client, keel1 } = b;
  const task = keelInput('bench-hello', [], 5);
  log(`batch: ${TASKS} one-turn tasks at concurrency ${CONCURRENCY}, started directly by the client, then as a batch`);

  const direct = (n: number) => {
    const directId = `bench-direct-${randomUUID()}`;
    return pool(
      Array.from({ length: n }, (_, i) => i),
      CONCURRENCY,
      async (i) => {
        const handle = await keel1.start(task, { workflowId: `${directId}-${i}` });
        const r = await handle.result();
        if (r.status !== 'completed' || r.turns !== 1)
          throw new Error(`direct task ${i}: ${r.status} ${r.turns} turns ${r.error ?? ''}`);
      },
    );
  };
  await direct(Math.min(TASKS, 10 * CONCURRENCY)); // warm-up: the worker's caches and JIT, not measured
  let t = performance.now();
  await direct(TASKS);
  const directSeconds = (performance.now() - t) / 1000;
  log(`  direct: ${TASKS} tasks in ${directSeconds.toFixed(1)} s`);

  const batchId = `bench-batch-${randomUUID()}`;
  const batchStart = new Date();
  t = performance.now();
  const handle = await startBatchWorkflow(
    client,
    QUEUE.keel1,
    Array.from({ length: TASKS }, () => task),
    { batchId, concurrency: CONCURRENCY },
  );
  const result = (await handle.result()) as AgentBatchResult;
  const batchSeconds = (performance.now() - t) / 1000;
  if (result.done !== TASKS) throw new Error(`batch: ${result.done}/${TASKS} done, ${result.failed} failed`);
  log(`  batch: ${TASKS} tasks in ${batchSeconds.toFixed(1)} s, ${result.continuedAsNew} continue-as-new`);

  const spans = await runningAcrossContinueAsNew(client, batchId, batchStart);
  return {
    tasks: TASKS,
    concurrency: CONCURRENCY,
    direct: { seconds: directSeconds, tasksPerMinute: (TASKS * 60) / directSeconds },
    batch: {
      seconds: batchSeconds,
      tasksPerMinute: (TASKS * 60) / batchSeconds,
      continuedAsNew: result.continuedAsNew,
      /** Children running at each continue-as-new of the batch (started before it, closed after it). */
      runningAtContinueAsNew: spans,
    },
    batchOverDirect: directSeconds / batchSeconds,
  };
}

/** For each continue-as-new of the batch: how many of its children had started and not yet closed at that moment. */
async function runningAcrossContinueAsNew(client: Client, batchId: string, since: Date): Promise<number[]> {
  const chain = await fetchChain(client, batchId);
  const boundaries = chain.events
    .filter((e) => e.eventType === E.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW)
    .map((e) => Number(e.eventTime?.seconds ?? 0) * 1000 + (e.eventTime?.nanos ?? 0) / 1e6);
  if (boundaries.length === 0) return [];
  const child = new RegExp(`^${batchId}-\\d+$`);
  const spans: { start: number; close: number }[] = [];
  for await (const w of client.workflow.list({
    query: `WorkflowType = 'agentWorkflow' AND StartTime >= '${since.toISOString()}'`,
  })) {
    if (child.test(w.workflowId) && w.closeTime)
      spans.push({ start: w.startTime.getTime(), close: w.closeTime.getTime() });
  }
  return boundaries.map((at) => spans.filter((s) => s.start < at && s.close > at).length);
}
