/**
 * The JSON Schema (draft-07) of `AgentRunResult`, built with TypeBox, and the source of its type (`Static` in
 * `run.ts`). `scripts/gen-schemas.ts` publishes it as schemas/agent-run-result.json. Transcript entries are checked as
 * the run input checks them (`PRIOR_MESSAGE_SCHEMA`) and typed as `Message` / `UserMessage`.
 */
import { Type } from 'typebox';
import type { Message, UserMessage } from './messages.js';
import { PRIOR_MESSAGE_SCHEMA } from './message-schemas.js';

const nonNegative = () => Type.Number({ minimum: 0 });

/** Usage as a result reports it: every count ≥ 0, cost in US dollars. */
const RESULT_USAGE_SCHEMA = Type.Object({
  input: nonNegative(),
  output: nonNegative(),
  cacheRead: nonNegative(),
  cacheWrite: nonNegative(),
  totalTokens: nonNegative(),
  cost: Type.Object(
    {
      input: Type.Number(),
      output: Type.Number(),
      cacheRead: Type.Number(),
      cacheWrite: Type.Number(),
      total: Type.Number(),
    },
    { description: 'US dollars.' },
  ),
});

export const RUN_STATUS_SCHEMA = Type.Unsafe<'completed' | 'stopped' | 'cancelled' | 'failed'>({
  enum: ['completed', 'stopped', 'cancelled', 'failed'],
});

const messages = <T>(description: string) =>
  Type.Unsafe<T[]>({ type: 'array', items: PRIOR_MESSAGE_SCHEMA, description });

/** JSON Schema of `AgentRunResult`, what `agentWorkflow` returns (docs/architecture.md#run-input-and-result). */
export const AGENT_RUN_RESULT_SCHEMA = Type.Object(
  {
    status: RUN_STATUS_SCHEMA,
    /** Text of the last assistant message. */
    finalText: Type.String({ description: 'Text of the last assistant message.' }),
    /** This workflow's messages (Pi `agent_end.messages`, across every agent run of a session). */
    newMessages: messages<Message>("This workflow's messages (Pi agent_end.messages)."),
    /** Set when `newMessages` was too large for a result payload; read them with the `messages` query. */
    newMessagesOmitted: Type.Optional(
      Type.Object(
        { count: Type.Integer({ minimum: 0 }), fromIndex: Type.Integer({ minimum: 0 }) },
        {
          description:
            'Set when newMessages was too large for a result payload; read them with the `messages` query from fromIndex.',
          additionalProperties: false,
        },
      ),
    ),
    /**
     * Where `newMessages` starts in the run's transcript: 0 when the transcript is the run's own messages alone; more
     * when it began with messages it was given (a fork's base, `messages` in the input, a conversation's earlier runs).
     * Absent in results of Keel before 0.11.0.
     */
    newMessagesFrom: Type.Optional(
      Type.Integer({
        minimum: 0,
        description:
          "Index of newMessages[0] in the run's transcript (0: the transcript is newMessages). Absent before Keel 0.11.0.",
      }),
    ),
    /** Summed over every model call, including failed attempts. */
    usage: Type.Object(RESULT_USAGE_SCHEMA.properties, {
      description: 'Summed over every model call, including failed attempts.',
    }),
    turns: Type.Integer({ minimum: 0 }),
    /** Model requests made (model calls and compactions; a call's retries are one). */
    modelCalls: Type.Optional(
      Type.Integer({
        minimum: 0,
        description: 'Model requests made (model calls and compactions; retries of a call are one).',
      }),
    ),
    error: Type.Optional(Type.String()),
    /**
     * A run given an `output` schema that completed: its final answer, parsed and valid against that schema (docs/runs.md
     * "Typed results"). Absent otherwise.
     */
    output: Type.Optional(
      Type.Unknown({ description: "The final answer parsed as JSON and valid against the run input's output schema." }),
    ),
    /**
     * Messages the run accepted (steering first, then follow-ups) but never answered: a task that ended by `maxTurns`,
     * an error or an interrupt with messages still queued. Nothing accepted is dropped silently.
     */
    unprocessed: Type.Optional(
      messages<UserMessage>('User messages the run accepted but never answered (steering first, then follow-ups).'),
    ),
  },
  {
    $id: 'https://keel.dev/schemas/agent-run-result.json',
    title: 'AgentRunResult',
    description:
      'Result of agentWorkflow. A run that ends with a model error fails the workflow with type AgentRunFailed and this object as its first detail; a cancelled run closes as Canceled with no result.',
    additionalProperties: false,
  },
);
