/**
 * The JSON Schema (draft-07) of `AgentRunInput`, built with TypeBox, and the source of its type (`Static` in `run.ts`,
 * `budget.ts`, `compaction.ts`). Its messages (`prompt`, `messages`) are the ones of `message-schemas.ts`. The client
 * and the workflow's first activity validate with it (`validate-input.ts`, on the code `npm run gen-schemas` generates); `scripts/gen-schemas.ts` publishes it as schemas/agent-run-input.json. Where the schema checks
 * less than the type states (prior `messages`, `metadata`), the field is `Type.Unsafe<TheType>(schema)`: the schema is
 * what the validator checks, the type what a well-formed input carries.
 *
 * Kept out of `budget.ts` and `compaction.ts`, which the workflow bundle imports: TypeBox stays out of the workflow
 * sandbox (it only needs the types).
 */
import { Type } from 'typebox';
import { constant, INCOMING_MESSAGE_SCHEMA, PRIOR_MESSAGE_SCHEMA } from './message-schemas.js';
import type { Message } from './messages.js';
import type { IncomingMessage } from './run.js';

/** `budget` of a run or a batch. Each limit is optional; a limit is reached when the spent amount is ≥ it. */
export const BUDGET_SCHEMA = Type.Object(
  {
    /** Total tokens (input + output + cache), summed over every attempt of every model call, compaction included. */
    maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
    /** US dollars, from the model catalog's prices. */
    maxCostUsd: Type.Optional(Type.Number({ exclusiveMinimum: 0 })),
    /** Model requests made by the workflow (a call's Temporal retries are one call; their tokens and cost count). */
    maxModelCalls: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

/** `compaction` of AgentRunInput: when the next call's estimated context exceeds `contextWindow - reserveTokens`. */
export const COMPACTION_CONFIG_SCHEMA = Type.Object(
  {
    /** Tokens kept free for the reply and the next messages. Default 16384 (Pi's). */
    reserveTokens: Type.Optional(Type.Integer({ minimum: 0 })),
    /** Recent tokens kept verbatim (not summarised). Default 20000 (Pi's). */
    keepRecentTokens: Type.Optional(Type.Integer({ minimum: 1 })),
    /** The model's context window. Default: the model catalog's (none for `scripted/*`: compaction off unless set). */
    contextWindow: Type.Optional(Type.Integer({ minimum: 1 })),
  },
  { additionalProperties: false },
);

/** JSON Schema of `compaction` in AgentRunInput: settings, or `false` (off). */
export const COMPACTION_SCHEMA = Type.Union([constant(false), COMPACTION_CONFIG_SCHEMA]);

/** Milliseconds, or a string Temporal reads as a duration (`ms` format): `"500ms"`, `"30s"`, `"5m"`, `"1h"`, `"2d"`. */
export const DURATION_PATTERN =
  '^\\d+(\\.\\d+)?\\s*(ms|msecs?|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)$';

/** Temporal Duration: milliseconds, or a string such as '30s', '1h'. */
const duration = () => Type.Union([Type.Integer({ minimum: 1 }), Type.String({ pattern: DURATION_PATTERN })]);

const queueMode = () => Type.Unsafe<'one-at-a-time' | 'all'>({ enum: ['one-at-a-time', 'all'] });

/** JSON Schema of `AgentRunInput` (draft-07), used by the client and the workflow's first activity. */
export const AGENT_RUN_INPUT_SCHEMA = Type.Object(
  {
    /** Text or user messages. Optional when `messages` ends in a user or toolResult message (Pi "continue"). */
    prompt: Type.Optional(
      // a type list, not anyOf: a bad entry is refused naming its own field (`prompt.0.content: is required`)
      Type.Unsafe<string | IncomingMessage[]>({
        type: ['string', 'array'],
        minItems: 1,
        items: INCOMING_MESSAGE_SCHEMA,
      }),
    ),
    /** Default "". */
    systemPrompt: Type.Optional(Type.String()),
    /** `provider/model-id`, e.g. `anthropic/claude-sonnet-4-5`, `scripted/demo`. */
    model: Type.String({ pattern: '^[^/\\s]+/\\S+$' }),
    /**
     * Models that take a request when `model` is down (docs/models.md "Fallback models"): after the model's classified
     * retries of a provider outage (`ModelError.Server` — 5xx, overloaded/529 —, `.Timeout`, `.Network`), the next one
     * in the list takes the request; never after a 4xx, a rate limit or a content refusal. Default: none.
     */
    fallbackModels: Type.Optional(
      Type.Array(Type.String({ pattern: '^[^/\\s]+/\\S+$' }), { minItems: 1, maxItems: 5, uniqueItems: true }),
    ),
    /** Names of tools registered on the worker. Default: none. */
    tools: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { uniqueItems: true })),
    /** Prior transcript. */
    messages: Type.Optional(Type.Unsafe<Message[]>({ type: 'array', items: PRIOR_MESSAGE_SCHEMA })),
    toolExecution: Type.Optional(Type.Unsafe<'parallel' | 'sequential'>({ enum: ['parallel', 'sequential'] })),
    steeringMode: Type.Optional(queueMode()),
    followUpMode: Type.Optional(queueMode()),
    /** Turns per agent run before it stops with status `stopped`. Default 100. */
    maxTurns: Type.Optional(Type.Integer({ minimum: 1 })),
    /** `task` (default): finish when the agent stops. `session`: then wait for follow-ups until `idleTimeout`. */
    mode: Type.Optional(Type.Unsafe<'task' | 'session'>({ enum: ['task', 'session'] })),
    /** Session mode: how long to wait for input before completing. Default '1h'. */
    idleTimeout: Type.Optional(duration()),
    /** Free-form labels, shown in the UI and given to tools and hooks. */
    metadata: Type.Optional(Type.Unsafe<Record<string, unknown>>({ type: 'object' })),
    /** Per-run model options. Never secrets. */
    modelOptions: Type.Optional(
      Type.Object(
        {
          maxTokens: Type.Optional(Type.Integer({ minimum: 1 })),
          temperature: Type.Optional(Type.Number({ minimum: 0 })),
          reasoning: Type.Optional(
            Type.Unsafe<'off' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh'>({
              enum: ['off', 'minimal', 'low', 'medium', 'high', 'xhigh'],
            }),
          ),
          /**
           * The provider's prompt cache (pi-ai's `cacheRetention`): `short` (default: Anthropic's 5 minutes, OpenAI's
           * in-memory), `long` (Anthropic 1 h, OpenAI 24 h where the model supports it) or `none` (no cache markers, no
           * session key). Keel sends the run's workflow id as pi-ai's `sessionId` (docs/models.md "Prompt caching").
           */
          cacheRetention: Type.Optional(Type.Unsafe<'none' | 'short' | 'long'>({ enum: ['none', 'short', 'long'] })),
          /**
           * The conversation's prompt-cache key (pi-ai's `sessionId`). Default: the run's workflow id. A fork carries its
           * original's, so its requests meet the cache its shared prefix left (docs/runs.md#fork-and-rewind).
           */
          sessionId: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** Temporal retry policy of model calls. Default: 10 attempts, 1 s doubling to 60 s. */
    modelRetry: Type.Optional(
      Type.Object(
        {
          maximumAttempts: Type.Optional(Type.Integer({ minimum: 1 })),
          initialInterval: Type.Optional(duration()),
          maximumInterval: Type.Optional(duration()),
          backoffCoefficient: Type.Optional(Type.Number({ minimum: 1 })),
        },
        { additionalProperties: false },
      ),
    ),
    /** Heartbeat timeout of model and tool activities: how fast a lost worker is noticed. Default '30s'. */
    heartbeatTimeout: Type.Optional(duration()),
    /**
     * How long a call of a worker-local tool waits for the run's home worker to start it (its schedule-to-start
     * timeout) before the run moves to another worker (README "Worker affinity"). Default '30s'.
     */
    homeWorkerTimeout: Type.Optional(duration()),
    /** Continue-as-new once history passes this many bytes (or when Temporal suggests it). Default 8 MiB. */
    continueAsNewAfterBytes: Type.Optional(Type.Integer({ minimum: 65536 })),
    /**
     * When the transcript is too large to carry into a continued run (over 1.5 MB, only with payload storage off — see
     * node-common/payload-storage.ts), history keeps growing; past this size the run stops (status `stopped`, with an error
     * saying what to do) before Temporal's 50 MB limit. Default 40 MiB.
     */
    maxHistoryBytes: Type.Optional(Type.Integer({ minimum: 65536, maximum: 48 * 1024 * 1024 })),
    /** How long a tool call needing approval waits for `approve` / `deny` before it gets an error result. Default '24h'. */
    approvalTimeout: Type.Optional(duration()),
    /**
     * Spend limits of this run (README "Budgets"), counted over every attempt, carried across continue-as-new, checked
     * before and after each model call. When one is reached no further model call is made and the run ends `stopped`
     * with `error` = `Budget exceeded: <tokens|cost|model calls> <used> of <limit>`.
     */
    budget: Type.Optional(BUDGET_SCHEMA),
    /**
     * The run's place in its provider keys' lines when a worker has provider limits (docs/provider-limits.md): 1
     * first … 5 last. Default 2 for a run started on its own, 4 for a batch's task (a task's input may set its own).
     * Keel's own line, not Temporal's `priorityKey` (docs/architecture.md, "Provider limits and priorities").
     */
    priority: Type.Optional(Type.Integer({ minimum: 1, maximum: 5 })),
    /**
     * Context compaction (README "Compaction"): when the next call's estimated context exceeds `contextWindow -
     * reserveTokens`, older messages are summarised by the model; later calls see the summary and the recent messages.
     * On by default for models with a catalog context window; off for `scripted/*` unless set; `false` turns it off.
     */
    compaction: Type.Optional(COMPACTION_SCHEMA),
    /**
     * Typed result (docs/runs.md "Typed results"): a JSON Schema (a TypeBox schema is one) the final answer must be
     * JSON valid against. The validated value is the result's `output`; an invalid answer is sent back to the model
     * with the validation errors, up to `outputRepairs` times, then the run fails with `InvalidAgentOutput`.
     */
    output: Type.Optional(Type.Unsafe<object>({ type: 'object' })),
    /** Invalid final answers sent back to the model before the run fails with `InvalidAgentOutput`. Default 2. */
    outputRepairs: Type.Optional(Type.Integer({ minimum: 0 })),
    /**
     * Counterfactual replay (docs/runs.md#counterfactual-replay): this run replays the recorded run `workflowId`
     * (`runId`: that run of it); a tool call matching a recorded one gets the recorded result without executing, another
     * is answered "not in the record" or runs live, by `liveTools` (default `none`). Set by `AgentClient.replay`.
     */
    replay: Type.Optional(
      Type.Object(
        {
          workflowId: Type.String({ minLength: 1 }),
          runId: Type.Optional(Type.String({ minLength: 1 })),
          liveTools: Type.Optional(Type.Unsafe<'none' | 'idempotent' | 'all'>({ enum: ['none', 'idempotent', 'all'] })),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { $id: 'https://keel.dev/schemas/agent-run-input.json', title: 'AgentRunInput', additionalProperties: false },
);
