/**
 * JSON wire types between `agentWorkflow` and Keel's activities. Small by design: the transcript travels by reference
 * (workflow id + message index), never inside an activity input (docs/architecture.md#history-stays-linear).
 */
import type { AssistantMessage, ImageContent, Message, TextContent, ToolCall, Usage } from './messages.js';
import type { AgentRunInput, DurationInput } from './run.js';
import type { ApprovalRecord } from './updates.js';
import type { TreeBudgetRef } from './tree/budget.js';
import type { Priority } from './limits/definition.js';
import type { ReplayRef } from './replay.js';

/** Which workflow's transcript an activity reads. `runKey` is the first run id of the continue-as-new chain. */
export interface RunRef {
  workflowId: string;
  runKey: string;
}

/** What the workflow needs to know about an enabled tool to schedule it. */
export interface ToolInfo {
  name: string;
  executionMode: 'sequential' | 'parallel';
  idempotent: boolean;
  /** Runs on the run's home worker (worker affinity); absent: any worker of the run's task queue. */
  workerLocal?: boolean;
  /** May run as a local activity (docs/local-tools.md); only idempotent tools; absent: a regular activity. */
  localActivity?: boolean;
  timeout?: DurationInput;
  retry?: {
    maximumAttempts?: number;
    initialInterval?: DurationInput;
    backoffCoefficient?: number;
    maximumInterval?: DurationInput;
  };
  /** An MCP tool (activities/mcp/): what its server listed when the run started, kept for the whole run. */
  mcp?: McpToolRecord;
  /** A sub-agent (README "Sub-agents"): a call starts a child run with what the run recorded here at its start. */
  agent?: SubAgentRecord;
  /**
   * How a call of this tool may wait for approval (from 0.6.3; absent: never, or a run started before): `always` (the
   * tool says `approval: 'always'`, the worker's `--approve`), `conditional` (its predicate or the worker's
   * `hooks.needsApproval` decides per call). Only the activity summaries the Web UI shows read it.
   */
  approval?: 'always' | 'conditional';
}

/**
 * A sub-agent as a run recorded it at its start (`startRun`, from `defineAgent`): what the model is shown, and what
 * the child run needs to start. Plain JSON, carried in the run's state.
 */
export interface SubAgentRecord {
  description: string;
  /** The call's arguments schema: the agent's `input`, or `{ task: string }`. */
  parameters: Record<string, unknown>;
  systemPrompt: string;
  tools: string[];
  /** Absent: the calling run's model. */
  model?: string;
  /** The child's `fallbackModels`. Absent: the calling run's, when the child runs the calling run's model. */
  fallbackModels?: string[];
  /** The child's model options; the calling run's are inherited under them, option by option (0.6.3). */
  modelOptions?: {
    maxTokens?: number;
    temperature?: number;
    reasoning?: 'off' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh';
    cacheRetention?: 'none' | 'short' | 'long';
  };
  /** The child is offered all of `tools`, whatever its tree's bound (0.6.3, `defineAgent({ ownTools })`). */
  ownTools?: true;
  maxTurns?: number;
  budget?: { maxTokens?: number; maxCostUsd?: number; maxModelCalls?: number };
  /** The final text must be JSON valid against this schema. */
  output?: Record<string, unknown>;
  /** The agent has an `input` schema: the child's prompt is the arguments as JSON (else the `task` argument). */
  typedInput?: true;
  /** How deep a tree this worker lets runs grow (its `maxAgentDepth`, default 3): a call at a greater depth is refused. */
  maxDepth: number;
  /**
   * Nothing on the worker sees a call before its child starts (0.8.0, set by `startRun`): no `beforeToolCall` or
   * `needsApproval` hook, no approval of the sub-agent, and the worker runs tool activities itself (role `all`). A call
   * whose arguments the workflow finds plainly valid (common/tree/plain-arguments.ts) then starts its child without
   * the preparation activity. Absent: every call is prepared by the activity, as before.
   */
  direct?: true;
}

/** Input of the `checkSubAgentOutput` local activity: a typed sub-agent's final text and its `output` schema. */
export interface CheckSubAgentOutputInput {
  name: string;
  text: string;
  schema: Record<string, unknown>;
}

/** `ok`: the parsed output; else the error text the caller gets as its tool result. */
export type CheckSubAgentOutputResult = { ok: true; value: unknown } | { ok: false; error: string };

/** Input of the `checkRunOutput` local activity: a run's final answer and its `output` schema (docs/runs.md "Typed results"). */
export interface CheckRunOutputInput {
  text: string;
  schema: object;
}

/** `ok`: the parsed output; else the error text (a sub-agent's caller's tool result, a run's repair request). */
export type CheckOutputResult = CheckSubAgentOutputResult;

/**
 * An MCP tool as a run recorded it at its start (`startRun`): the model is shown this description and schema, and the
 * arguments are validated against this schema, whatever the server lists later. Annotations as the server gave them.
 */
export interface McpToolRecord {
  server: string;
  /** The tool's name on its server (the Keel name is `<server>__<tool>`). */
  tool: string;
  description: string;
  parameters: Record<string, unknown>;
  readOnly?: boolean;
  destructive?: boolean;
  idempotentHint?: boolean;
  openWorld?: boolean;
}

/**
 * `checkBatchStart`'s answer: the line a batch started unencrypted on an encrypting worker fails with; from 0.12.0
 * `{ noLocalActivities: true }` on a worker that caches no workflow (the batch then starts its tasks without a local
 * activity: not lean); else undefined. A history recorded before 0.12.0 holds only a line or nothing.
 */
export type BatchStartCheck = string | { noLocalActivities: true } | undefined;

export interface StartRunInput {
  input: AgentRunInput;
}

/** `errors` empty ⇔ the input is valid; each entry names one bad field. */
export interface StartRunResult {
  errors: string[];
  /** The model's context window from its catalog (absent for models without one, e.g. `scripted/*`). */
  contextWindow?: number;
  /** The worker offloads large payloads (external storage): a transcript of any size can be carried across continue-as-new. */
  largePayloads?: boolean;
  tools: ToolInfo[];
  /** The task queue only the worker that ran `startRun` polls (its home queue for worker-local tools), if it has one. */
  homeQueue?: string;
  /** The namespace has Keel's search attributes, so the workflow may upsert them. */
  searchAttributes: boolean;
  /**
   * The worker that ran `startRun` runs the tool activities on the run's task queue too (role `all`, from 0.8.0): the
   * run schedules its tool calls there, where an activity is dispatched eagerly to the worker completing the workflow
   * task, instead of on `<taskQueue>-tools` (workflows/agent/tool-placement.ts).
   */
  toolsOnRunQueue?: boolean;
  /**
   * The worker caches no workflow (`maxCachedWorkflows: 0`, from 0.12.0), so a local activity in flight would be dropped
   * at each eviction (docs/local-tools.md#limits): the run starts none — its children not lean, no tool placed as one
   * (`tools[].localActivity` is then never set).
   */
  noLocalActivities?: boolean;
  /** The worker verifies approvals (README "Who may approve"): the run accepts only signed decisions. */
  verifiedApprovals?: boolean;
  /**
   * The worker's own tools this run did not enable (from 0.6.3), so a call of one is answered "registered on this
   * worker but not enabled for this run" rather than Pi's "Tool X not found".
   */
  otherTools?: string[];
}

export interface CallModelInput {
  run: RunRef;
  /** The model sees transcript[0, messageCount). */
  messageCount: number;
  /** Digest of transcript[0, messageCount) (common/transcript-digest.ts): lets a worker's cache skip the query. */
  digest: number;
  /**
   * transcript[messageCount - tail.length, messageCount): the messages after the last assistant message, when small
   * (from 0.8.0, common/transcript-tail.ts). A worker whose copy has the messages before them appends these and checks
   * the digest instead of querying the workflow.
   */
  tail?: Message[];
  model: string;
  systemPrompt: string;
  tools: string[];
  options: NonNullable<AgentRunInput['modelOptions']>;
  turn: number;
  /** What is left of the run's budget when the call is scheduled: retries stop once failed attempts spent it. */
  budgetLeft?: { tokens?: number; costUsd?: number };
  /** A run in a tree (a sub-agent, a batch task of a budgeted batch): each attempt reserves from the root first. */
  treeBudget?: TreeBudgetRef;
  /**
   * The run's place in its provider key's line (docs/provider-limits.md), 1 first: set only when the run names one or
   * is a batch's task (absent: an interactive run, priority 2). Read only by a worker with provider limits.
   */
  priority?: Priority;
}

/** Input of the `compact` activity: summarise transcript[from, keepFrom) of transcript[0, messageCount). */
export interface CompactInput {
  run: RunRef;
  messageCount: number;
  digest: number;
  model: string;
  options: NonNullable<AgentRunInput['modelOptions']>;
  from: number;
  keepFrom: number;
  /** Index of the compaction entry whose summary is updated. */
  previous?: number;
  budgetLeft?: CallModelInput['budgetLeft'];
  treeBudget?: CallModelInput['treeBudget'];
  priority?: CallModelInput['priority'];
}

export interface CompactResult {
  /** The summary text (without Pi's wrapping). */
  summary: string;
  usage: Usage;
  failedAttemptsUsage?: Usage;
}

export interface CallModelResult {
  message: AssistantMessage;
  /** Usage of earlier attempts that failed (retries), to be counted in the run's usage. */
  failedAttemptsUsage?: Usage;
  /** Activity summaries of the message's tool calls by id, from each tool's `summary(args)` (`read src/app.ts`). */
  toolSummaries?: Record<string, string>;
}

/** The finalised outcome of one tool call, from which the workflow builds the toolResult message. */
export interface ToolOutcome {
  content: (TextContent | ImageContent)[];
  details: unknown;
  usage?: Usage;
  addedToolNames?: string[];
  terminate?: boolean;
  isError: boolean;
  timestamp: number;
}

export interface ToolCallRef {
  run: RunRef;
  /** Index of the assistant message holding the call. */
  assistantIndex: number;
  /** Digest of transcript[0, assistantIndex + 1). */
  digest: number;
  toolCallId: string;
  toolName: string;
  /**
   * The call itself, when small (from 0.8.0, common/transcript-tail.ts): a worker that has not the assistant message
   * runs it without querying the workflow (unless a hook needs the message, or `callIndex` is given).
   */
  call?: ToolCall;
  /**
   * Position of the call among the message's tool calls (0-based). Activities look the call up by position (and check
   * its id), so two calls with the same id cannot be mixed; absent (older workflows): the first call with the id.
   */
  callIndex?: number;
  metadata: Record<string, unknown>;
  /**
   * Local activities only (docs/local-tools.md): the run's home queue. A worker whose own home queue is another one
   * refuses the call with `KeelNotHome` before preparing it (nothing runs); absent: any worker may run it.
   */
  home?: string;
  /**
   * Scheduled on the run's task queue (`StartRunResult.toolsOnRunQueue`, from 0.8.0): a worker with role `model` that
   * gets it refuses it with `KeelNotHome` before anything runs, and the run places it on its tool queue instead.
   */
  onRunQueue?: true;
  /** A replaying run's call (common/replay.ts; `at`: the call's position in its message): served from the record. */
  replay?: ReplayRef;
}

export interface PrepareToolCallsInput {
  run: RunRef;
  assistantIndex: number;
  /** Digest of transcript[0, assistantIndex + 1). */
  digest: number;
  /** `callIndex` as in {@link ToolCallRef}. */
  calls: { toolCallId: string; toolName: string; callIndex?: number; call?: ToolCall }[];
  metadata: Record<string, unknown>;
  /** A replaying run's calls (`at[k]`: position of `calls[k]` in its message): served from the record. */
  replay?: ReplayRef;
}

/** Preparation result of one call: an immediate error outcome, or runnable with its prepared arguments. */
export type PreparedCall =
  | { toolCallId: string; callIndex?: number; status: 'immediate'; outcome: ToolOutcome }
  /** `args` absent: the raw arguments of the call, unchanged. */
  | { toolCallId: string; callIndex?: number; status: 'runnable'; args?: unknown }
  /** Runnable once a person approves (README "Approvals"); `argsDigest` of the prepared arguments. */
  | { toolCallId: string; callIndex?: number; status: 'approval'; args?: unknown; argsDigest: string };

export interface ExecuteToolCallInput extends ToolCallRef {
  /** Prepared arguments; absent when identical to the call's raw arguments. */
  args?: unknown;
  /** The call was approved: the decision goes into the result's `details.approval`. */
  approval?: ApprovalRecord;
}

/** `approval`: prepared, not executed; the workflow waits for a decision, then runs it with `executeToolCall`. */
export type RunToolCallResult =
  | { prepared: 'immediate' | 'executed'; outcome: ToolOutcome }
  | { prepared: 'approval'; args?: unknown; argsDigest: string };
