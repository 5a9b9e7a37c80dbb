/**
 * A worker's provider limits, defined with the namespace's limiters when it starts (docs/provider-limits.md): one
 * definition per namespace and key. For each key the worker sends its definition (`keelLimitsDefine`, starting the
 * key's limiter when none runs); a limiter holding a different one refuses it, and the worker then stops with a text
 * naming the key, both definitions and what to do. Runs alongside the worker (the limiter's first workflow task may
 * need this very worker).
 */
import { Client, WithStartWorkflowOperation } from '@temporalio/client';
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

/** Defines `limits` with the namespace's limiters; rejects (the text says what to do) when one holds another. */
export async function defineProviderLimits(options: WorkerOptions, limits: ProviderLimits): Promise<void> {
  if (!options.connection) return;
  const client = new Client({
    connection: options.connection,
    namespace: options.namespace ?? 'default',
    ...(options.dataConverter ? { dataConverter: options.dataConverter } : {}),
  });
  const conflicts: string[] = [];
  for (const [key, limit] of Object.entries(limits)) {
    const answer = await client.workflow.executeUpdateWithStart<Workflow, DefineAnswer, [DefineLimits]>(
      LIMITS_DEFINE_UPDATE,
      {
        args: [{ spec: limitSpec(limit), limit }],
        startWorkflowOperation: new WithStartWorkflowOperation(LIMITER_WORKFLOW_TYPE, {
          workflowId: limiterWorkflowId(options.taskQueue, key),
          taskQueue: options.taskQueue,
          workflowIdConflictPolicy: 'USE_EXISTING',
          args: [{ key, limit } satisfies LimiterInput],
        }),
      },
    );
    if (!answer.ok) conflicts.push(answer.conflict);
  }
  if (conflicts.length > 0)
    throw new Error(
      `This worker was refused: ${conflicts.join('; ')}. Start it with the limits the namespace's other workers have; ` +
        `to change them, stop the workers with the old limits and end the key's limiter (temporal workflow terminate --workflow-id '${limiterWorkflowId(options.taskQueue, '<key>')}'), then start the workers with the new ones.`,
    );
}
