/**
 * A worker's provider limits, defined with the namespace's limiters when it starts (docs/provider-limits.md): one
 * definition per namespace and key. For each key the worker sends its definition (`keelLimitsDefine`, starting the
 * key's limiter when none runs); a limiter holding a different one refuses it, and the worker then stops with a text
 * naming the key, both definitions and what to do. Runs alongside the worker (the limiter's first workflow task may
 * need this very worker). A limiter that cannot answer now (its workflow task failed with a killed worker, the server
 * busy or restarting) is asked again, 1 s doubling to 30 s, while the worker runs: only a refusal stops the worker.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Client, isGrpcServiceError, WithStartWorkflowOperation } from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import type { WorkerOptions } from '@temporalio/worker';
import { limiterWorkflowId, limitSpec, type ProviderLimits } from '../common/limits/definition.js';
import {
  LIMITER_WORKFLOW_TYPE,
  LIMITS_DEFINE_UPDATE,
  type DefineAnswer,
  type DefineLimits,
  type LimiterInput,
} from '../common/limits/protocol.js';

/** Spacing of the asks while a limiter cannot answer: from the first, doubling up to the most. */
export const DEFINE_RETRY_MS = { first: 1_000, most: 30_000 };

/**
 * Defines `limits` with the namespace's limiters; rejects (the text says what to do) when one holds another. A limiter
 * that cannot answer (a gRPC error: its workflow task failed with a killed worker, the server busy) is asked again until
 * it does or `signal` aborts (then it resolves); `warn` hears the first failure of each key.
 */
export async function defineProviderLimits(
  options: WorkerOptions,
  limits: ProviderLimits,
  { signal, warn }: { signal?: AbortSignal; warn?: (message: string) => void } = {},
): Promise<void> {
  if (!options.connection) return;
  const client = new Client({
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
  });
  const conflicts: string[] = [];
  for (const [key, limit] of Object.entries(limits)) {
    const define = () =>
      client.workflow.executeUpdateWithStart<Workflow, DefineAnswer, [DefineLimits]>(LIMITS_DEFINE_UPDATE, {
        args: [{ spec: limitSpec(limit), limit }],
        startWorkflowOperation: new WithStartWorkflowOperation(LIMITER_WORKFLOW_TYPE, {
          workflowId: limiterWorkflowId(options.taskQueue, key),
          taskQueue: options.taskQueue,
          workflowIdConflictPolicy: 'USE_EXISTING',
          args: [{ key, limit } satisfies LimiterInput],
        }),
      });
    const answer = await untilAnswered(define, key, signal, warn);
    if (answer === undefined) return;
    if (!answer.ok) conflicts.push(answer.conflict);
  }
  if (conflicts.length > 0)
    throw new Error(
      `This worker was refused: ${conflicts.join('; ')}. Start it with the limits the namespace's other workers have; ` +
        `to change them, stop the workers with the old limits and end the key's limiter (temporal workflow terminate --workflow-id '${limiterWorkflowId(options.taskQueue, '<key>')}'), then start the workers with the new ones.`,
    );
}

/** `define()`'s answer, asked again after each gRPC error; undefined once `signal` aborts. Other errors reject. */
async function untilAnswered(
  define: () => Promise<DefineAnswer>,
  key: string,
  signal: AbortSignal | undefined,
  warn: ((message: string) => void) | undefined,
): Promise<DefineAnswer | undefined> {
  for (
    let wait = DEFINE_RETRY_MS.first, told = false;
    !signal?.aborted;
    wait = Math.min(2 * wait, DEFINE_RETRY_MS.most)
  ) {
    try {
      return await define();
    } catch (err) {
      if (!isGrpcServiceError(err) && !isGrpcServiceError((err as { cause?: unknown }).cause)) throw err;
      if (!told)
        warn?.(`[keel] the ${key} provider limiter cannot answer yet (${(err as Error).message}); asking again`);
      told = true;
      await sleep(wait, undefined, { signal }).catch(() => undefined);
    }
  }
  return undefined;
}
