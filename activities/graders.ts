/**
 * Graders (README "Graded batches"): the built-ins (`exact`, `includes`, `regex`, `json-schema` on the final text,
 * `tool-called` on the transcript), `defineGrader` for a worker's own, and the `gradeBatchTask` activity that reads a
 * finished child run's result and judges it. A grader that throws (or is unknown) gives a grading error, recorded by
 * the batch, not a task failure; reading the child's result may fail and is retried like any activity.
 */
import { heartbeat } from '@temporalio/activity';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { carriedResult } from '../node-common/run-result.js';
import { graderOf, type BatchTask, type Grade, type GradeOutcome, type GraderUsage } from '../common/grading.js';
import { emptyUsage } from '../common/messages.js';
import type { AgentRunResult } from '../common/run.js';
import { BUILTIN_GRADER_DEFINITIONS, judge, type GraderDefinition } from '../node-common/graders.js';

export {
  BUILTIN_GRADER_DEFINITIONS,
  defineGrader,
  type GraderContext,
  type GraderDefinition,
} from '../node-common/graders.js';

/** A child run's result: its return value, or the result a failed run carries (else a bare one with the error). */
async function childResult(client: Client, workflowId: string): Promise<AgentRunResult> {
  try {
    return (await client.workflow.getHandle(workflowId).result()) as AgentRunResult;
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    const carried = carriedResult(err);
    if (carried) return carried;
    const cause = err.cause;
    return {
      status: 'failed',
      finalText: '',
      newMessages: [],
      turns: 0,
      usage: emptyUsage(),
      error: cause?.message ?? err.message,
    };
  }
}

export interface GradeTaskInput {
  workflowId: string;
  task: BatchTask;
  variant?: string;
  repeat: number;
}

/** The `gradeBatchTask` activity over this worker's graders. */
export function createGradeBatchTask(deps: { graders?: GraderDefinition[]; client: () => Client }) {
  const custom = new Map<string, GraderDefinition>();
  for (const g of deps.graders ?? []) {
    if (custom.has(g.name) || g.name in BUILTIN_GRADER_DEFINITIONS)
      throw new Error(
        `Two graders are named "${g.name}"; grader names must be unique on a worker (built-ins included).`,
      );
    custom.set(g.name, g);
  }
  return async function gradeBatchTask(input: GradeTaskInput): Promise<GradeOutcome> {
    const name = graderOf(input.task) ?? 'exact';
    const grade = custom.get(name)?.grade ?? BUILTIN_GRADER_DEFINITIONS[name];
    if (!grade)
      return {
        error: `unknown grader "${name}": the built-ins are ${Object.keys(BUILTIN_GRADER_DEFINITIONS).join(', ')}; register others on the worker with defineGrader (graders: [...])`,
      };
    const result = await childResult(deps.client(), input.workflowId);
    const beat = setInterval(() => heartbeat(), 5000);
    try {
      return await judge(name, grade, {
        task: input.task,
        result,
        transcript: result.newMessages ?? [],
        workflowId: input.workflowId,
        ...(input.variant !== undefined ? { variant: input.variant } : {}),
        repeat: input.repeat,
      });
    } finally {
      clearInterval(beat);
    }
  };
}
