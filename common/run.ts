import { BUDGET_SCHEMA, type Budget, type BudgetLine } from './budget.js';
import { COMPACTION_SCHEMA, type CompactionConfig } from './compaction.js';
import type { AssistantMessage, Message, ToolResultMessage, Usage, UserMessage } from './messages.js';
import type { ApprovalRecord, PendingApproval } from './updates.js';

export type QueueMode = 'one-at-a-time' | 'all';
export type ToolExecution = 'parallel' | 'sequential';
/** Temporal Duration: milliseconds, or a string such as '30s', '1h'. */
export type DurationInput = number | string;

/** A message sent by `followUp` / `steer`: text, or a user message (timestamp optional). */
export type IncomingMessage = string | (Omit<UserMessage, 'timestamp'> & { timestamp?: number });

/** The one argument of `agentWorkflow` (docs/architecture.md#run-input-and-result). Plain JSON; validated against `AGENT_RUN_INPUT_SCHEMA`. */
export interface AgentRunInput {
  /** Text or user messages. Optional when `messages` ends in a user or toolResult message (Pi "continue"). */
  prompt?: string | IncomingMessage[];
  /** Default "". */
  systemPrompt?: string;
  /** `provider/model-id`, e.g. `anthropic/claude-sonnet-4-5`, `scripted/demo`. */
  model: string;
  /** Names of tools registered on the worker. Default: none. */
  tools?: string[];
  /** Prior transcript. */
  messages?: Message[];
  toolExecution?: ToolExecution;
  steeringMode?: QueueMode;
  followUpMode?: QueueMode;
  /** Turns per agent run before it stops with status `stopped`. Default 100. */
  maxTurns?: number;
  /** `task` (default): finish when the agent stops. `session`: then wait for follow-ups until `idleTimeout`. */
  mode?: 'task' | 'session';
  /** Session mode: how long to wait for input before completing. Default '1h'. */
  idleTimeout?: DurationInput;
  /** Free-form labels, shown in the UI and given to tools and hooks. */
  metadata?: Record<string, unknown>;
  /** Per-run model options. Never secrets. */
  modelOptions?: {
    maxTokens?: number;
    temperature?: number;
    reasoning?: 'off' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
  };
  /** Temporal retry policy of model calls. Default: 10 attempts, 1 s doubling to 60 s. */
  modelRetry?: {
    maximumAttempts?: number;
    initialInterval?: DurationInput;
    maximumInterval?: DurationInput;
    backoffCoefficient?: number;
  };
  /** Heartbeat timeout of model and tool activities: how fast a lost worker is noticed. Default '30s'. */
  heartbeatTimeout?: DurationInput;
  /**
   * How long a call of a worker-local tool waits for the run's home worker to start it (its schedule-to-start
   * timeout) before the run moves to another worker (README "Worker affinity"). Default '30s'.
   */
  homeWorkerTimeout?: DurationInput;
  /** Continue-as-new once history passes this many bytes (or when Temporal suggests it). Default 8 MiB. */
  continueAsNewAfterBytes?: number;
  /**
   * When the transcript is too large to carry into a continued run (over 1.5 MB, only with payload storage off — see
   * worker/payload-storage.ts), history keeps growing; past this size
   * the run stops (status `stopped`, with an error saying what to do) before Temporal's 50 MB limit. Default 40 MiB.
   */
  maxHistoryBytes?: number;
  /** How long a tool call needing approval waits for `approve` / `deny` before it gets an error result. Default '24h'. */
  approvalTimeout?: DurationInput;
  /**
   * Spend limits of this run (README "Budgets"), counted over every attempt, carried across continue-as-new, checked
   * before and after each model call. When one is reached no further model call is made and the run ends `stopped`
   * with `error` = `Budget exceeded: <tokens|cost|model calls> <used> of <limit>`.
   */
  budget?: Budget;
  /**
   * Context compaction (README "Compaction"): when the next call's estimated context exceeds `contextWindow -
   * reserveTokens`, older messages are summarised by the model; later calls see the summary and the recent messages.
   * On by default for models with a catalog context window; off for `scripted/*` unless set; `false` turns it off.
   */
  compaction?: CompactionConfig | false;
}

export type RunStatus = 'completed' | 'stopped' | 'cancelled' | 'failed';

/** What `agentWorkflow` returns (docs/architecture.md#run-input-and-result). */
export interface AgentRunResult {
  status: RunStatus;
  /** Text of the last assistant message. */
  finalText: string;
  /** This workflow's messages (Pi `agent_end.messages`, across every agent run of a session). */
  newMessages: Message[];
  /** Set when `newMessages` was too large for a result payload; read them with the `messages` query. */
  newMessagesOmitted?: { count: number; fromIndex: number };
  /** Summed over every model call, including failed attempts. */
  usage: Usage;
  turns: number;
  /** Model requests made (model calls and compactions; a call's retries are one). */
  modelCalls?: number;
  error?: string;
  /**
   * Messages the run accepted (steering first, then follow-ups) but never answered: a task that ended by `maxTurns`,
   * an error or an interrupt with messages still queued. Nothing accepted is dropped silently.
   */
  unprocessed?: UserMessage[];
}

/** `awaiting-approval`: an agent run is running and at least one tool call waits for `approve` / `deny`. */
export type SessionStatus = 'starting' | 'running' | 'awaiting-approval' | 'waiting' | RunStatus;

/** Answer of the `state` query. */
export interface AgentRunState {
  status: SessionStatus;
  mode: 'task' | 'session';
  model: string;
  /** Turns completed in this workflow (all agent runs). */
  turns: number;
  /** Agent runs started (a session starts one per follow-up). */
  runs: number;
  messageCount: number;
  queued: { steering: number; followUp: number };
  /** `startedAt`: ISO time the tool's activity was scheduled. */
  runningTools: { toolCallId: string; toolName: string; startedAt?: string }[];
  usage: Usage;
  lastError?: string;
  lastReply?: string;
  continuedAsNew: number;
  /** Once the run has closed: messages it accepted but never answered (see `AgentRunResult.unprocessed`). */
  unprocessed?: UserMessage[];
  /** Tool calls waiting for `approve` / `deny`, in request order. */
  pendingApprovals: PendingApproval[];
  /** Decisions on calls that needed approval (the latest 200), oldest first. */
  approvals: ApprovalRecord[];
  /** Each limit of the run's budget with what was spent against it. */
  budget?: BudgetLine[];
}

export interface MessagesPage {
  messages: Message[];
  from: number;
  total: number;
}

export type { AssistantMessage, ToolResultMessage };

/** Milliseconds, or a string Temporal reads as a duration (`ms` format): `"500ms"`, `"30s"`, `"5m"`, `"1h"`, `"2d"`. */
export const DURATION_PATTERN =
  '^\\d+(\\.\\d+)?\\s*(ms|msecs?|milliseconds?|s|secs?|seconds?|m|mins?|minutes?|h|hrs?|hours?|d|days?|w|weeks?)$';
const durationSchema = {
  anyOf: [
    { type: 'integer', minimum: 1 },
    { type: 'string', pattern: DURATION_PATTERN },
  ],
};

const textBlock = {
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { const: 'text' }, text: { type: 'string' } },
};
const imageBlock = {
  type: 'object',
  required: ['type', 'data', 'mimeType'],
  properties: { type: { const: 'image' }, data: { type: 'string' }, mimeType: { type: 'string' } },
};
const userContent = { anyOf: [{ type: 'string' }, { type: 'array', items: { anyOf: [textBlock, imageBlock] } }] };

const incomingMessage = {
  anyOf: [
    { type: 'string' },
    {
      type: 'object',
      required: ['role', 'content'],
      properties: { role: { const: 'user' }, content: userContent, timestamp: { type: 'number' } },
    },
  ],
};

const messageSchema = {
  type: 'object',
  required: ['role'],
  properties: { role: { enum: ['user', 'assistant', 'toolResult'] } },
  allOf: [
    {
      if: { properties: { role: { const: 'user' } } },
      then: { required: ['content'], properties: { content: userContent, timestamp: { type: 'number' } } },
    },
    {
      if: { properties: { role: { const: 'assistant' } } },
      then: {
        required: ['content', 'stopReason'],
        properties: {
          content: {
            type: 'array',
            items: {
              type: 'object',
              required: ['type'],
              properties: { type: { enum: ['text', 'thinking', 'toolCall'] } },
              allOf: [
                {
                  if: { properties: { type: { const: 'text' } } },
                  then: { required: ['text'], properties: { text: { type: 'string' } } },
                },
                {
                  if: { properties: { type: { const: 'thinking' } } },
                  then: { required: ['thinking'], properties: { thinking: { type: 'string' } } },
                },
                {
                  if: { properties: { type: { const: 'toolCall' } } },
                  then: {
                    required: ['id', 'name', 'arguments'],
                    properties: { id: { type: 'string' }, name: { type: 'string' }, arguments: { type: 'object' } },
                  },
                },
              ],
            },
          },
          stopReason: { enum: ['stop', 'length', 'toolUse', 'error', 'aborted'] },
        },
      },
    },
    {
      if: { properties: { role: { const: 'toolResult' } } },
      then: {
        required: ['toolCallId', 'toolName', 'content', 'isError'],
        properties: {
          toolCallId: { type: 'string' },
          toolName: { type: 'string' },
          content: { type: 'array', items: { anyOf: [textBlock, imageBlock] } },
          isError: { type: 'boolean' },
        },
      },
    },
  ],
};

/** JSON Schema of `AgentRunInput` (draft-07), used by the client and the workflow's first activity. */
export const AGENT_RUN_INPUT_SCHEMA = {
  $id: 'https://keel.dev/schemas/agent-run-input.json',
  title: 'AgentRunInput',
  type: 'object',
  additionalProperties: false,
  required: ['model'],
  properties: {
    prompt: { anyOf: [{ type: 'string' }, { type: 'array', minItems: 1, items: incomingMessage }] },
    systemPrompt: { type: 'string' },
    model: { type: 'string', pattern: '^[^/\\s]+/\\S+$' },
    tools: { type: 'array', items: { type: 'string', minLength: 1 }, uniqueItems: true },
    messages: { type: 'array', items: messageSchema },
    toolExecution: { enum: ['parallel', 'sequential'] },
    steeringMode: { enum: ['one-at-a-time', 'all'] },
    followUpMode: { enum: ['one-at-a-time', 'all'] },
    maxTurns: { type: 'integer', minimum: 1 },
    mode: { enum: ['task', 'session'] },
    idleTimeout: durationSchema,
    metadata: { type: 'object' },
    modelOptions: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxTokens: { type: 'integer', minimum: 1 },
        temperature: { type: 'number', minimum: 0 },
        reasoning: { enum: ['off', 'minimal', 'low', 'medium', 'high', 'xhigh'] },
      },
    },
    modelRetry: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maximumAttempts: { type: 'integer', minimum: 1 },
        initialInterval: durationSchema,
        maximumInterval: durationSchema,
        backoffCoefficient: { type: 'number', minimum: 1 },
      },
    },
    heartbeatTimeout: durationSchema,
    homeWorkerTimeout: durationSchema,
    continueAsNewAfterBytes: { type: 'integer', minimum: 65536 },
    maxHistoryBytes: { type: 'integer', minimum: 65536, maximum: 48 * 1024 * 1024 },
    approvalTimeout: durationSchema,
    budget: BUDGET_SCHEMA,
    compaction: COMPACTION_SCHEMA,
  },
} as const;

/** JSON Schema of an incoming `followUp` / `steer` signal argument. */
export const INCOMING_MESSAGE_SCHEMA = incomingMessage;
