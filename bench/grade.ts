/**
 * Bench section `grade`: the grading overhead per task — the same one-turn tasks as a plain batch and as a graded one
 * (`expected` with the built-in `exact`, one `gradeBatchTask` activity per task), at the same concurrency on the same
 * worker, alternated over BENCH_ROUNDS rounds (medians: the wall-time difference is noisy on a shared machine); overhead
 * = (graded − plain) wall time / tasks. Also, from the graded batches' histories, the grading activity's own latency
 * (scheduled → completed), which does not depend on what else runs. Environment: BENCH_GRADE_TASKS (default 200),
 * BENCH_BATCH_CONCURRENCY (default 20).
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import protoModule from '@temporalio/proto';
import { startBatchWorkflow } from '../client/batch-client.js';
import { fetchChain } from './history.js';
import type { AgentBatchResult } from '../common/batch-definitions.js';
import type { AgentRunInput } from '../common/run.js';
import { QUEUE } from './fixtures.js';
import { keelInput } from './runs.js';
import { ROUNDS, type Bench } from './context.js';

const TASKS = Math.max(1, Number(process.env.BENCH_GRADE_TASKS ?? 200));
const E = protoModule.temporal.api.enums.v1.EventType;
const ms = (t: { seconds?: unknown; nanos?: number | null } | null | undefined) =>
  Number(t?.seconds ?? 0) * 1000 + (t?.nanos ?? 0) / 1e6;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Scheduled → completed of every `gradeBatchTask` activity in a batch's chain (ms). */
async function gradingLatencies(client: Client, batchId: string): Promise<number[]> {
  const { events } = await fetchChain(client, batchId);
  const scheduled = new Map<string, number>();
  const out: number[] = [];
  for (const e of events) {
    if (
      e.eventType === E.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      e.activityTaskScheduledEventAttributes?.activityType?.name === 'gradeBatchTask'
    )
      scheduled.set(String(e.eventId), ms(e.eventTime));
    const done = e.activityTaskCompletedEventAttributes;
    const at = done && scheduled.get(String(done.scheduledEventId));
    if (at !== undefined && at !== null && done) out.push(ms(e.eventTime) - at);
  }
  return out;
}
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_BATCH_CONCURRENCY ?? 20));

export async function gradeSection(b: Bench) {
  const { log, client } = b;
  const task = keelInput('bench-hello', [], 5);
  const run = async (tasks: AgentRunInput[], label: string) => {
    const t = performance.now();
    const batchId = `bench-${label}-${randomUUID()}`;
    const handle = await startBatchWorkflow(client, QUEUE.keel1, tasks, { batchId, concurrency: CONCURRENCY });
    const result = (await handle.result()) as AgentBatchResult;
    const seconds = (performance.now() - t) / 1000;
    if (result.done !== tasks.length) throw new Error(`${label} batch: ${result.done}/${tasks.length} done`);
    log(`  ${label}: ${tasks.length} tasks in ${seconds.toFixed(1)} s`);
    return { seconds, result, batchId };
  };
  log(`grade: ${TASKS} one-turn tasks at concurrency ${CONCURRENCY}, plain then graded (exact)`);
  await run(
    Array.from({ length: Math.min(TASKS, 5 * CONCURRENCY) }, () => task),
    'warm-up',
  ); // not measured
  const plain: number[] = [];
  const graded: number[] = [];
  const latencies: number[] = [];
  const gradedTasks = Array.from({ length: TASKS }, () => ({ ...task, expected: 'ok' }) as AgentRunInput);
  for (let round = 0; round < ROUNDS; round++) {
    plain.push(
      (
        await run(
          Array.from({ length: TASKS }, () => task),
          'plain',
        )
      ).seconds,
    );
    const g = await run(gradedTasks, 'graded');
    if (g.result.grading?.passed !== TASKS)
      throw new Error(`graded batch: ${g.result.grading?.passed ?? 0}/${TASKS} passed`);
    graded.push(g.seconds);
    latencies.push(...(await gradingLatencies(client, g.batchId)));
  }
  return {
    tasks: TASKS,
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    plainSeconds: median(plain),
    gradedSeconds: median(graded),
    /** Extra wall time per task of a graded batch (ms; medians over the rounds). */
    overheadMsPerTask: ((median(graded) - median(plain)) * 1000) / TASKS,
    /** The grading activity, scheduled → completed (ms): median and 95th percentile. */
    gradingActivityMs: {
      median: median(latencies),
      p95: [...latencies].sort((a, b) => a - b)[Math.floor(latencies.length * 0.95)],
    },
  };
}
