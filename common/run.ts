import type { Static } from 'typebox';
import type { BudgetLine } from './budget.js';
import type { TreeBudgetLine } from './tree/budget.js';
import type { INCOMING_MESSAGE_SCHEMA as INCOMING_SCHEMA } from './message-schemas.js';
import type { AssistantMessage, Message, ToolResultMessage, Usage, UserMessage } from './messages.js';
import type { AGENT_RUN_INPUT_SCHEMA } from './run-input-schema.js';
import type { AGENT_RUN_RESULT_SCHEMA, RUN_STATUS_SCHEMA } from './run-result-schema.js';
import type { ApprovalRecord, PendingApproval } from './updates.js';

export type QueueMode = NonNullable<AgentRunInput['steeringMode']>;
export type ToolExecution = NonNullable<AgentRunInput['toolExecution']>;
/** Temporal Duration: milliseconds, or a string such as '30s', '1h'. */
export type DurationInput = number | string;

/** A message sent by `followUp` / `steer`: text, or a user message (timestamp optional). */
export type IncomingMessage = Static<typeof INCOMING_SCHEMA>;

/**
 * The one argument of `agentWorkflow` (docs/architecture.md#run-input-and-result). Plain JSON; the type of
 * `AGENT_RUN_INPUT_SCHEMA` (common/run-input-schema.ts), which validates it.
 */
export type AgentRunInput = Static<typeof AGENT_RUN_INPUT_SCHEMA>;

export type RunStatus = Static<typeof RUN_STATUS_SCHEMA>;

/** What `agentWorkflow` returns (docs/architecture.md#run-input-and-result): the type of `AGENT_RUN_RESULT_SCHEMA`. */
export type AgentRunResult = Static<typeof AGENT_RUN_RESULT_SCHEMA>;

/** `awaiting-approval`: an agent run is running and at least one tool call waits for `approve` / `deny`. */
export type SessionStatus = 'starting' | 'running' | 'awaiting-approval' | 'waiting' | RunStatus;

/** Answer of the `state` query. */
export interface AgentRunState {
  status: SessionStatus;
  mode: 'task' | 'session';
  model: string;
  /** Turns completed in this workflow (all agent runs). */
  turns: number;
  /** While a turn is in progress: its number (`turns + 1`), as `keel run` / `keel watch` and the details show it. */
  turn?: number;
  /** Agent runs started (a session starts one per follow-up). */
  runs: number;
  messageCount: number;
  queued: { steering: number; followUp: number };
  /** `startedAt`: ISO time the tool's activity was scheduled. */
  runningTools: { toolCallId: string; toolName: string; startedAt?: string }[];
  /**
   * The run's MCP tools (docs/tools.md "MCP tools"), as recorded when it started: each with its server and whether the
   * server says it reaches an open world (`openWorldHint`, absent when it does not say). Absent when there are none.
   */
  mcpTools?: { name: string; server: string; openWorld?: boolean }[];
  usage: Usage;
  /**
   * A run that moved to one of its `fallbackModels` (docs/models.md#fallback-models): the last switch,
   * `turn 3: anthropic/claude-sonnet-4-5 → openai/gpt-5 (ModelError.Server: Overloaded)`. Absent otherwise.
   */
  fallback?: string;
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
  /**
   * A root run whose tree reserved from its budget (sub-agents, README "Budgets"): each limit with what the whole tree
   * settled (`spent`, this run's own included), what its requests in flight have reserved, and the limit.
   */
  treeBudget?: TreeBudgetLine[];
}

export interface MessagesPage {
  messages: Message[];
  from: number;
  total: number;
}

export type { AssistantMessage, ToolResultMessage };

export { AGENT_RUN_INPUT_SCHEMA, DURATION_PATTERN } from './run-input-schema.js';
export { INCOMING_MESSAGE_SCHEMA } from './message-schemas.js';
