/**
 * Writes the JSON Schemas other languages use to start Keel runs (docs/architecture.md#run-input-and-result) into schemas/:
 *   agent-run-input.json   — `AgentRunInput`, the one argument of `agentWorkflow` (from common/run-input-schema.ts AGENT_RUN_INPUT_SCHEMA)
 *   agent-run-result.json  — `AgentRunResult`, its result (and the details of an `AgentRunFailed` failure)
 *   agent-batch-input.json — `AgentBatchInput`, the argument of `agentBatchWorkflow`
 *
 *   npx tsx scripts/gen-schemas.ts           regenerate
 *   npx tsx scripts/gen-schemas.ts --check   exit 1 when a file differs from the code (test/unit/cli-schemas.test.ts does the same)
 */
import { readFileSync, writeFileSync, mkdirSync, existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BUDGET_SCHEMA, RUN_INPUT_MESSAGE_SCHEMA } from '../common/run-input-schema.js';
import { AGENT_RUN_INPUT_SCHEMA, type AgentRunResult, type RunStatus } from '../common/run.js';

export const SCHEMAS_DIR = fileURLToPath(new URL('../schemas/', import.meta.url));
const DRAFT = 'http://json-schema.org/draft-07/schema#';
const BASE = 'https://keel.dev/schemas/';

const usage = {
  type: 'object',
  required: ['input', 'output', 'cacheRead', 'cacheWrite', 'totalTokens', 'cost'],
  properties: {
    input: { type: 'number', minimum: 0 },
    output: { type: 'number', minimum: 0 },
    cacheRead: { type: 'number', minimum: 0 },
    cacheWrite: { type: 'number', minimum: 0 },
    totalTokens: { type: 'number', minimum: 0 },
    cost: {
      type: 'object',
      description: 'US dollars.',
      required: ['input', 'output', 'cacheRead', 'cacheWrite', 'total'],
      properties: {
        input: { type: 'number' },
        output: { type: 'number' },
        cacheRead: { type: 'number' },
        cacheWrite: { type: 'number' },
        total: { type: 'number' },
      },
    },
  },
};

/** JSON Schema of `AgentRunResult` (common/run.ts), draft-07. Messages use the same shape as the input's `messages`. */
export const AGENT_RUN_RESULT_SCHEMA = {
  $id: `${BASE}agent-run-result.json`,
  title: 'AgentRunResult',
  description:
    'Result of agentWorkflow. A run that ends with a model error fails the workflow with type AgentRunFailed and this object as its first detail; a cancelled run closes as Canceled with no result.',
  type: 'object',
  additionalProperties: false,
  required: ['status', 'finalText', 'newMessages', 'usage', 'turns'] as const,
  properties: {
    status: { enum: ['completed', 'stopped', 'cancelled', 'failed'] as const },
    finalText: { type: 'string', description: 'Text of the last assistant message.' },
    newMessages: {
      type: 'array',
      items: RUN_INPUT_MESSAGE_SCHEMA,
      description: "This workflow's messages (Pi agent_end.messages).",
    },
    newMessagesOmitted: {
      type: 'object',
      description:
        'Set when newMessages was too large for a result payload; read them with the `messages` query from fromIndex.',
      additionalProperties: false,
      required: ['count', 'fromIndex'],
      properties: { count: { type: 'integer', minimum: 0 }, fromIndex: { type: 'integer', minimum: 0 } },
    },
    usage: { ...usage, description: 'Summed over every model call, including failed attempts.' },
    turns: { type: 'integer', minimum: 0 },
    modelCalls: {
      type: 'integer',
      minimum: 0,
      description: 'Model requests made (model calls and compactions; retries of a call are one).',
    },
    error: { type: 'string' },
    unprocessed: {
      type: 'array',
      items: RUN_INPUT_MESSAGE_SCHEMA,
      description: 'User messages the run accepted but never answered (steering first, then follow-ups).',
    },
  },
};

// Compile-time drift checks of the hand-written result schema against the TypeScript type (npm test type-checks):
// the same fields, the same required fields, the same statuses.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
type RequiredKeys<T> = { [K in keyof T]-?: {} extends Pick<T, K> ? never : K }[keyof T];
export const RESULT_SCHEMA_MATCHES_TYPE: [
  Same<keyof typeof AGENT_RUN_RESULT_SCHEMA.properties, keyof AgentRunResult>,
  Same<(typeof AGENT_RUN_RESULT_SCHEMA.required)[number], RequiredKeys<AgentRunResult>>,
  Same<(typeof AGENT_RUN_RESULT_SCHEMA.properties.status.enum)[number], RunStatus>,
] = [true, true, true];

/** JSON Schema of `AgentBatchInput` (workflows/batch-definitions.ts). */
export const AGENT_BATCH_INPUT_SCHEMA = {
  $id: `${BASE}agent-batch-input.json`,
  title: 'AgentBatchInput',
  description: 'Argument of agentBatchWorkflow: task i runs as child agentWorkflow <batchId>-<i>.',
  type: 'object',
  additionalProperties: false,
  required: ['tasks'],
  properties: {
    tasks: {
      anyOf: [
        { type: 'array', items: { $ref: 'agent-run-input.json' } },
        {
          type: 'object',
          description:
            'Page reference: each page is an agentBatchWorkflow execution started with { "taskPage": [AgentRunInput…] }.',
          required: ['pages'],
          additionalProperties: false,
          properties: {
            pages: {
              type: 'array',
              items: {
                type: 'object',
                required: ['workflowId', 'count'],
                additionalProperties: false,
                properties: { workflowId: { type: 'string' }, count: { type: 'integer', minimum: 0 } },
              },
            },
          },
        },
      ],
    },
    concurrency: { type: 'integer', minimum: 1, description: 'Runs at a time (default 8).' },
    taskQueue: { type: 'string', minLength: 1, description: "Task queue of the child runs (default: the batch's)." },
    continueAsNewAfterEvents: { type: 'integer', minimum: 1 },
    continueAsNewAfterBytes: { type: 'integer', minimum: 1 },
    continueAsNewAfterTasks: { type: 'integer', minimum: 1 },
    budget: {
      ...BUDGET_SCHEMA,
      description:
        'One budget for all tasks: each task starts with its own tightened to what is left; once spent no task starts.',
    },
  },
};

function withDraft(schema: Record<string, unknown>): Record<string, unknown> {
  return { $schema: DRAFT, ...schema };
}

/** The files of schemas/ as the code defines them. */
export function schemaFiles(): { name: string; content: string }[] {
  const files = [
    ['agent-run-input.json', { ...AGENT_RUN_INPUT_SCHEMA, $id: `${BASE}agent-run-input.json` }],
    ['agent-run-result.json', AGENT_RUN_RESULT_SCHEMA],
    ['agent-batch-input.json', AGENT_BATCH_INPUT_SCHEMA],
  ] as const;
  return files.map(([name, schema]) => ({
    name,
    content: `${JSON.stringify(withDraft(schema as Record<string, unknown>), null, 2)}\n`,
  }));
}

/** Names of the files that differ from the code (missing counts as different). */
export function driftedSchemas(dir = SCHEMAS_DIR): string[] {
  return schemaFiles()
    .filter((f) => !existsSync(join(dir, f.name)) || readFileSync(join(dir, f.name), 'utf8') !== f.content)
    .map((f) => f.name);
}

function isMain(): boolean {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  if (process.argv.includes('--check')) {
    const drifted = driftedSchemas();
    if (drifted.length) {
      console.error(`schemas out of date: ${drifted.join(', ')}; run \`npm run gen-schemas\``);
      process.exit(1);
    }
    console.log('schemas up to date');
  } else {
    mkdirSync(SCHEMAS_DIR, { recursive: true });
    for (const f of schemaFiles()) writeFileSync(join(SCHEMAS_DIR, f.name), f.content);
    console.log(
      `wrote ${schemaFiles()
        .map((f) => `schemas/${f.name}`)
        .join(', ')}`,
    );
  }
}
