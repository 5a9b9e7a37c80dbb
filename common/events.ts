import type { BudgetKind } from './budget.js';
import type { HeartbeatDeltas } from './stream.js';
import {
  addUsage,
  emptyUsage,
  type AssistantMessage,
  type ImageContent,
  type Message,
  type TextContent,
  type ToolResultMessage,
  type Usage,
} from './messages.js';

/** The result a tool produced, as carried by `tool_execution_end` (Pi's AgentToolResult). */
export interface ToolExecutionResult {
  content: (TextContent | ImageContent)[];
  details: unknown;
  terminate?: boolean;
}

/**
 * The deterministic agent events of Pi (Pi's shapes; docs/architecture.md#events), in Pi's names. Deltas (`message_update`,
 * `tool_execution_update`) are not here: they travel as activity heartbeats, never into history.
 */
export type AgentEvent =
  | { type: 'agent_start' }
  /** `reason` (Keel's addition): `interrupted` or `cancelled` when an interrupt or cancel ended the agent run. */
  | { type: 'agent_end'; messages: Message[]; reason?: 'interrupted' | 'cancelled' }
  /** `turn` (Keel's addition): the turn's number in the whole conversation, as `keel status` and the details count. */
  | { type: 'turn_start'; turn?: number }
  | { type: 'turn_end'; message: AssistantMessage; toolResults: ToolResultMessage[] }
  /**
   * `messageIndex` (Keel's addition, in the `events` query's answer from 0.6.0): the message's index in the
   * transcript, which the live stream's deltas name (common/stream.ts).
   */
  | { type: 'message_start'; message: Message; messageIndex?: number }
  | { type: 'message_end'; message: Message; messageIndex?: number }
  | {
      type: 'tool_execution_start';
      toolCallId: string;
      toolName: string;
      args: unknown;
      /** A sub-agent call (README "Sub-agents"): the child run's workflow id. */
      childWorkflowId?: string;
    }
  | {
      type: 'tool_execution_end';
      toolCallId: string;
      toolName: string;
      result: ToolExecutionResult;
      isError: boolean;
      /** A sub-agent call (README "Sub-agents"): the child run's workflow id. */
      childWorkflowId?: string;
    }
  | KeelEvent;

/**
 * Keel's own events (not Pi's), emitted only when the feature is in use. `budget_warning`: a budget limit passed 80 %
 * (once per limit and run). `budget_exceeded`: a limit was reached; no further model call is made (`kind` `batch`: a
 * task's batch refused or stopped it; `tree`: a sub-agent's root refused it — README "Budgets"). `compaction`: see
 * common/compaction.ts.
 */
export type KeelEvent =
  | { type: 'budget_warning'; kind: BudgetKind; used: number; limit: number }
  | { type: 'budget_exceeded'; kind: BudgetKind | 'batch' | 'tree'; error: string }
  /** The run's home worker was lost at this call (worker affinity): `text` says where worker-local tools run now. */
  | { type: 'worker_rehomed'; toolCallId: string; toolName: string; from: string; to?: string; text: string }
  /**
   * The run's model request went to the next of its `fallbackModels`: `from` was down after its retries (`errorType`,
   * `error`: the provider's failure), `to` takes the request and the run's next ones (docs/models.md#fallback-models).
   */
  | { type: 'model_fallback'; turn: number; from: string; to: string; errorType: string; error: string }
  /** Older messages were summarised (the entry is appended to the transcript), or — with `error` — the summary failed. */
  | {
      type: 'compaction';
      reason: 'threshold' | 'overflow';
      firstKept: number;
      summarized: number;
      tokensBefore: number;
      error?: string;
    };

/** An event as the `events` query returns it: numbered from 1, in emission order, across continue-as-new. */
export type LoggedEvent = AgentEvent & { seq: number };

export interface EventsPage {
  events: LoggedEvent[];
  /** Pass as `after` to read on. */
  lastSeq: number;
  /** Oldest sequence number still held; older events were dropped from the bounded log. */
  firstSeq: number;
}

/**
 * A heartbeat detail of the `callModel` activity (built by common/model-heartbeat.ts `modelHeartbeat`): the call's
 * delta window (the streamed text, once), the attempt's streamed usage, and the usage of earlier failed attempts.
 * Before the attempt's first delta only `failedUsage` (and a retry's `deltas`) is set; after a retry the text starts
 * again (a new `attempt`, an `attempt_reset` item).
 */
export interface ModelHeartbeat {
  kind: 'model';
  /** The shape's version: 2 from 0.7.0 on (the text only in `deltas`); absent before (common/model-heartbeat.ts). */
  v?: number;
  /** The activity attempt that streamed the text (1 = first). */
  attempt?: number;
  /** Counts this attempt's streamed snapshots; grows with every heartbeat of the attempt. */
  seq?: number;
  /**
   * @deprecated The 0.3–0.6.3 shape: characters (UTF-16 code units) of the attempt's text so far (its text blocks
   * joined). No longer sent (the text travels once, in `deltas`); still read from a run in flight during a deploy.
   */
  textLength?: number;
  /** @deprecated The 0.3–0.6.3 shape: the last ≤ 2048 characters of that text. No longer sent; still read. */
  tail?: string;
  /** The call's delta log window (common/stream.ts), read by `AgentRunHandle.stream()`; `callModel` only. */
  deltas?: HeartbeatDeltas;
  /** What this attempt has streamed so far, as the provider reports it. */
  usage?: Usage;
  /** Sum of the usage of the earlier failed attempts of this call. */
  failedUsage?: Usage;
  /**
   * @deprecated The 0.3 shape: the whole partial message. No longer sent; still read (a run in flight during a
   * deploy may hold such a detail).
   */
  partial?: AssistantMessage;
}

/**
 * Usage spent by the attempts a model heartbeat speaks for: the earlier failed attempts (`failedUsage`) plus what the
 * heartbeating attempt had streamed (`usage`, or in the 0.3 shape `partial.usage`) — an attempt lost with its worker
 * never reports more than that. A failing attempt's last heartbeat has no streamed usage (its usage is folded into
 * `failedUsage`), so nothing counts twice; an attempt lost before heartbeating leaves the previous attempt's detail,
 * which gives the same sum it would have sent. Undefined when there is nothing (or the detail is not a model heartbeat).
 */
export function heartbeatUsage(details: unknown): Usage | undefined {
  if (!details || typeof details !== 'object' || (details as { kind?: unknown }).kind !== 'model') return undefined;
  const d = details as { failedUsage?: unknown; usage?: unknown; partial?: { usage?: unknown } };
  const failed = asUsage(d.failedUsage);
  const streamed = asUsage(d.usage) ?? asUsage(d.partial?.usage);
  if (!failed && !streamed) return undefined;
  return addUsage(addUsage(emptyUsage(), failed), streamed);
}

function asUsage(value: unknown): Usage | undefined {
  if (!value || typeof value !== 'object') return undefined;
  const u = value as Partial<Usage>;
  if (typeof u.input !== 'number' || typeof u.output !== 'number') return undefined;
  return { ...emptyUsage(), ...u, cost: { ...emptyUsage().cost, ...(u.cost ?? {}) } };
}

/**
 * A heartbeat detail of a tool activity whose tool has finished while its outcome cannot be written to the payload
 * store (worker/store-finished-outcome.ts): the writes are retried with backoff until the store is back.
 */
export interface StoreHeartbeat {
  kind: 'store';
  /** `runToolCall` or `executeToolCall`. */
  activity: string;
  /** Failed writes so far. */
  attempts: number;
  lastError: string;
  /** Epoch ms of the first failed write. */
  failingSinceMs: number;
  nextAttemptInMs: number;
}

/** A heartbeat detail of a tool activity: the latest `onUpdate` snapshot. */
export interface ToolHeartbeat {
  kind: 'tool';
  toolCallId: string;
  toolName: string;
  args: unknown;
  partialResult: unknown;
  updates: number;
}
