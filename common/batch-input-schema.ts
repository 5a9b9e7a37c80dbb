/**
 * The JSON Schema (draft-07) of `AgentBatchInput`, the argument of `agentBatchWorkflow`, built with TypeBox, and the
 * source of its type (`Static` in common/batch-definitions.ts, which imports only the type: TypeBox stays out of the
 * workflow bundle). `scripts/gen-schemas.ts` publishes it as schemas/agent-batch-input.json, its tasks referring to
 * agent-run-input.json.
 */
import { Type } from 'typebox';
import type { AgentRunInput } from './run.js';
import { BUDGET_SCHEMA } from './run-input-schema.js';

/**
 * A reference to tasks too large for one payload: each page is held by an `agentBatchWorkflow` execution started with
 * `{ taskPage: [...] }` (≤ ~1 MB each), which hands slices of it to the batch by signal on request.
 */
export const BATCH_PAGE_REF_SCHEMA = Type.Object(
  {
    pages: Type.Array(
      Type.Object({ workflowId: Type.String(), count: Type.Integer({ minimum: 0 }) }, { additionalProperties: false }),
    ),
  },
  {
    description:
      'Page reference: each page is an agentBatchWorkflow execution started with { "taskPage": [AgentRunInput…] }.',
    additionalProperties: false,
  },
);

export const AGENT_BATCH_INPUT_SCHEMA = Type.Object(
  {
    /**
     * The runs, in order; task `i` runs as child workflow `<batchId>-<i>`. Inline, or a page reference for big lists. A
     * task may also carry `expected` and `grader` (common/grading.ts), taken off before its child starts.
     */
    tasks: Type.Union([
      Type.Unsafe<AgentRunInput[]>({
        type: 'array',
        items: {
          anyOf: [
            { $ref: 'agent-run-input.json' },
            {
              description:
                'A graded task: an AgentRunInput with `expected` and/or `grader` (taken off before its child run starts, which checks the rest).',
              type: 'object',
              required: ['model'],
              properties: { expected: {}, grader: { type: 'string', minLength: 1 } },
              anyOf: [{ required: ['expected'] }, { required: ['grader'] }],
            },
          ],
        },
      }),
      BATCH_PAGE_REF_SCHEMA,
    ]),
    /** Runs at a time. Default 8. */
    concurrency: Type.Optional(Type.Integer({ minimum: 1, description: 'Runs at a time (default 8).' })),
    /** Task queue of the child runs. Default: the batch's own. */
    taskQueue: Type.Optional(
      Type.String({ minLength: 1, description: "Task queue of the child runs (default: the batch's)." }),
    ),
    /** Continue-as-new once this run's history has this many events (or Temporal suggests it). Default 10,000. */
    continueAsNewAfterEvents: Type.Optional(Type.Integer({ minimum: 1 })),
    /** … or this many bytes. Default 8 MiB. */
    continueAsNewAfterBytes: Type.Optional(Type.Integer({ minimum: 1 })),
    /** … or after this many child runs were started in this run (a knob for tests). Default: no limit. */
    continueAsNewAfterTasks: Type.Optional(Type.Integer({ minimum: 1 })),
    /**
     * When no task was reported for this many seconds, the batch asks Temporal which of its running children are
     * closed (a terminated or timed-out child never reports) and records them. Default 300.
     */
    reconcileAfterSeconds: Type.Optional(Type.Integer({ minimum: 1 })),
    /**
     * One budget for all tasks (README "Budgets"): each task's own budget is tightened to what is left; once the finished
     * tasks spent it no task starts (recorded `stopped`, `Budget exceeded: … (batch budget)`) and running ones are asked
     * to stop before their next model call.
     */
    /** Runs of each task (per variant), for pass@k: children `<batchId>-<index>-r<j>`. Default 1. */
    repeat: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 100,
        description: 'Runs of each task (per variant), for pass@k. Default 1.',
      }),
    ),
    /**
     * Each task runs once per variant (children `<batchId>-<variant>-<index>`), the variant's fields replacing the
     * task's; one budget for all; the summary has a line per variant and the tasks where they disagree.
     */
    variants: Type.Optional(
      Type.Array(
        Type.Object(
          {
            name: Type.String({ pattern: '^[A-Za-z0-9_.]{1,40}$' }),
            model: Type.Optional(Type.String({ minLength: 1 })),
            /** The variant's fallback models (replacing the task's), as a run's `fallbackModels`. */
            fallbackModels: Type.Optional(
              Type.Array(Type.String({ pattern: '^[^/\\s]+/\\S+$' }), { minItems: 1, maxItems: 5, uniqueItems: true }),
            ),
            systemPrompt: Type.Optional(Type.String()),
            maxTurns: Type.Optional(Type.Integer({ minimum: 1 })),
          },
          { additionalProperties: false },
        ),
        { minItems: 1, maxItems: 10 },
      ),
    ),
    /** Heartbeat timeout of the grading activity, in seconds (a lost worker's grading is retried after it). Default 30. */
    graderHeartbeatSeconds: Type.Optional(Type.Integer({ minimum: 1 })),
    budget: Type.Optional(
      Type.Object(BUDGET_SCHEMA.properties, {
        additionalProperties: false,
        description:
          'One budget for all tasks: each task starts with its own tightened to what is left; once spent no task starts.',
      }),
    ),
  },
  {
    $id: 'https://keel.dev/schemas/agent-batch-input.json',
    title: 'AgentBatchInput',
    description: 'Argument of agentBatchWorkflow: task i runs as child agentWorkflow <batchId>-<i>.',
    additionalProperties: false,
  },
);
