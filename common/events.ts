import type { AssistantMessage, ImageContent, Message, TextContent, ToolResultMessage, Usage } from './messages.js';

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
  | { type: 'agent_end'; messages: Message[] }
  | { type: 'turn_start' }
  | { type: 'turn_end'; message: AssistantMessage; toolResults: ToolResultMessage[] }
  | { type: 'message_start'; message: Message }
  | { type: 'message_end'; message: Message }
  | { type: 'tool_execution_start'; toolCallId: string; toolName: string; args: unknown }
  | { type: 'tool_execution_end'; toolCallId: string; toolName: string; result: ToolExecutionResult; isError: boolean };

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
 * A heartbeat detail of the `callModel` activity: the partial assistant message so far (absent until the attempt's
 * first delta; after a retry the partial starts again), and the usage of earlier failed attempts.
 */
export interface ModelHeartbeat {
  kind: 'model';
  partial?: AssistantMessage;
  failedUsage?: Usage;
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
