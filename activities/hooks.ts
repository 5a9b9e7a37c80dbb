import type { AssistantMessage, Message, ToolCall } from '../common/messages.js';
import type { AgentToolResult, ToolContext } from './tools/define-tool.js';

export interface BeforeToolCallContext {
  assistantMessage: AssistantMessage;
  /** The raw call as the model sent it. */
  toolCall: ToolCall;
  /** Validated, coerced arguments. Mutating them changes what `execute` receives (no re-validation). */
  args: unknown;
  context: ToolContext;
}

export interface BeforeToolCallResult {
  /** Refuse the call: it becomes an error result with `reason` (default `Tool execution was blocked`). */
  block?: boolean;
  reason?: string;
  /** With `block`: the error result asks the loop to stop after this batch. */
  terminate?: boolean;
}

export interface NeedsApprovalContext extends BeforeToolCallContext {
  /** What the tool's own `approval` option says for these arguments. */
  declared: boolean;
}

export interface AfterToolCallContext extends BeforeToolCallContext {
  result: AgentToolResult;
  isError: boolean;
}

/** Overrides field by field; absent fields keep their values (no deep merge). */
export type AfterToolCallResult = Partial<Pick<AgentToolResult, 'content' | 'details' | 'usage' | 'terminate'>> & {
  isError?: boolean;
};

export interface TransformContextInfo {
  workflowId: string;
  model: string;
  turn: number;
}

/**
 * Worker hooks (Pi's `beforeToolCall` / `afterToolCall` / `transformContext`). They run inside activities on the worker,
 * get run information but never the whole transcript (except `transformContext`, which shapes it), and may run again
 * when an activity is retried.
 */
export interface AgentHooks {
  /** Called after validation, before `execute`. A throw becomes an error result with its message. */
  beforeToolCall?(
    ctx: BeforeToolCallContext,
    signal: AbortSignal,
  ): Promise<BeforeToolCallResult | void> | BeforeToolCallResult | void;
  /**
   * Policy for every tool: return true / false to require approval or not (overriding the tool's `approval`), nothing
   * to keep the tool's own setting. Called after `beforeToolCall`, in the preparation activity; a throw becomes an error result.
   */
  needsApproval?(ctx: NeedsApprovalContext, signal: AbortSignal): Promise<boolean | void> | boolean | void;
  /** Called after `execute` (also when it threw). A throw becomes an error result with its message. */
  afterToolCall?(
    ctx: AfterToolCallContext,
    signal: AbortSignal,
  ): Promise<AfterToolCallResult | void> | AfterToolCallResult | void;
  /** Shapes the messages of one model request (called once per request, before conversion). Must not mutate its input. */
  transformContext?(
    messages: Message[],
    signal: AbortSignal,
    info: TransformContextInfo,
  ): Promise<Message[]> | Message[];
}
