/**
 * Bench section `grade`: the grading overhead per task — the same one-turn tasks as a plain batch and as a graded one
 * (`expected` with the built-in `exact`, one `gradeBatchTask` activity per task), at the same concurrency on the same
 * worker; overhead = (graded − plain) wall time / tasks. Environment: BENCH_GRADE_TASKS (default 500),
 * BENCH_BATCH_CONCURRENCY (default 20).
 */
import { randomUUID } from 'node:crypto';
import { startBatchWorkflow } from '../client/batch-client.js';
import type { AgentBatchResult } from '../common/batch-definitions.js';
import type { AgentRunInput } from '../common/run.js';
import { QUEUE } from './fixtures.js';
import { keelInput } from './runs.js';
import type { Bench } from './context.js';

const TASKS = Math.max(1, Number(process.env.BENCH_GRADE_TASKS ?? 500));
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_BATCH_CONCURRENCY ?? 20));

export async function gradeSection(b: Bench) {
  const { log, client } = b;
  const task = keelInput('bench-hello', [], 5);
  const run = async (tasks: AgentRunInput[], label: string) => {
    const t = performance.now();
    const handle = await startBatchWorkflow(client, QUEUE.keel1, tasks, {
      batchId: `bench-${label}-${randomUUID()}`,
      concurrency: CONCURRENCY,
    });
    const result = (await handle.result()) as AgentBatchResult;
    const seconds = (performance.now() - t) / 1000;
    if (result.done !== tasks.length) throw new Error(`${label} batch: ${result.done}/${tasks.length} done`);
    log(`  ${label}: ${tasks.length} tasks in ${seconds.toFixed(1)} s`);
    return { seconds, result };
  };
  log(`grade: ${TASKS} one-turn tasks at concurrency ${CONCURRENCY}, plain then graded (exact)`);
  await run(
    Array.from({ length: Math.min(TASKS, 5 * CONCURRENCY) }, () => task),
    'warm-up',
  ); // not measured
  const plain = await run(
    Array.from({ length: TASKS }, () => task),
    'plain',
  );
  const graded = await run(
    Array.from({ length: TASKS }, () => ({ ...task, expected: 'ok' }) as AgentRunInput),
    'graded',
  );
  if (graded.result.grading?.passed !== TASKS)
    throw new Error(`graded batch: ${graded.result.grading?.passed ?? 0}/${TASKS} passed`);
  return {
    tasks: TASKS,
    concurrency: CONCURRENCY,
    plainSeconds: plain.seconds,
    gradedSeconds: graded.seconds,
    /** Extra wall time per task of a graded batch (ms). */
    overheadMsPerTask: ((graded.seconds - plain.seconds) * 1000) / TASKS,
  };
}
