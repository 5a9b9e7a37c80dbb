/**
 * One tool call through Pi's pipeline (docs/architecture.md#tool-calls: prepare, execute, finalise):
 * lookup → prepareArguments → validate → beforeToolCall → execute → afterToolCall. Every failure becomes an error
 * outcome with the exact text, except a tool's retryable `KeelToolTransport` failure (an idempotent MCP tool whose
 * server connection broke), which ends the activity attempt so that its retry policy runs the call again.
 */
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType, OPERATION_ABORTED, thrownMessage, TOOL_BLOCKED, toolNotFound } from '../../common/errors.js';
import type { AssistantMessage, ToolCall } from '../../common/messages.js';
import type { ToolOutcome } from '../../common/wire.js';
import type { AgentHooks } from '../hooks.js';
import type { AgentToolResult, ToolContext, ToolDefinition, ToolUpdateCallback } from './define-tool.js';
import { validateToolArguments } from './validate-arguments.js';
import { argsDigest } from '../../node-common/args-digest.js';
import { needsApproval } from '../approvals/needs-approval.js';

/** `approval`: runnable once a person approves (argsDigest of `args`). */
export type Preparation =
  | { status: 'immediate'; outcome: ToolOutcome }
  | { status: 'runnable'; args: unknown; approval?: { argsDigest: string } };

export interface CallScope {
  tool: ToolDefinition | undefined;
  call: ToolCall;
  /** The message holding the call; absent only on a worker with no hook that is given it (tool-activities.ts). */
  assistantMessage?: AssistantMessage;
  context: ToolContext;
  hooks: AgentHooks;
  signal: AbortSignal;
}

export async function prepareCall(s: CallScope): Promise<Preparation> {
  const { tool, call, hooks, signal } = s;
  // Pi: once aborted, no preparation and no hooks.
  if (signal.aborted) return immediate(OPERATION_ABORTED);
  if (!tool) return immediate(toolNotFound(call.name));
  try {
    let raw: unknown = call.arguments;
    if (tool.prepareArguments) raw = tool.prepareArguments(raw);
    // A call whose arguments did not parse (`argumentsError`) is refused here, after prepareArguments (Pi's order).
    const args = validateToolArguments(tool, { name: call.name, arguments: raw, argumentsError: call.argumentsError });
    if (hooks.beforeToolCall) {
      const verdict = await hooks.beforeToolCall(
        { assistantMessage: s.assistantMessage!, toolCall: call, args, context: s.context },
        signal,
      );
      if (signal.aborted) return immediate(OPERATION_ABORTED);
      if (verdict?.block) return immediate(verdict.reason || TOOL_BLOCKED, verdict.terminate === true);
    }
    if (signal.aborted) return immediate(OPERATION_ABORTED);
    if (await needsApproval(s, args)) return { status: 'runnable', args, approval: { argsDigest: argsDigest(args) } };
    return { status: 'runnable', args };
  } catch (err) {
    return immediate(thrownMessage(err));
  }
}

/** Executes a runnable call and finalises it with `afterToolCall`. `onUpdate` calls after the tool settled are ignored. */
export async function executeCall(
  s: CallScope & { tool: ToolDefinition },
  args: unknown,
  onUpdate: ToolUpdateCallback,
): Promise<ToolOutcome> {
  const { tool, call, hooks, signal } = s;
  let settled = false;
  let result: AgentToolResult;
  let isError = false;
  try {
    result = (await tool.execute(call.id, args, signal, (partial) => settled || onUpdate(partial), s.context)) ?? {};
    isError = result.isError === true;
  } catch (err) {
    if (signal.aborted) return errorToolOutcome(OPERATION_ABORTED);
    if (isTransportFailure(err)) throw err;
    result = { content: [{ type: 'text', text: thrownMessage(err) }], details: {} };
    isError = true;
  } finally {
    settled = true;
  }
  if (hooks.afterToolCall) {
    try {
      const o = await hooks.afterToolCall(
        { assistantMessage: s.assistantMessage!, toolCall: call, args, result, isError, context: s.context },
        signal,
      );
      if (o) {
        result = {
          ...result,
          ...(o.content !== undefined ? { content: o.content } : {}),
          ...(o.details !== undefined ? { details: o.details } : {}),
          ...(o.usage !== undefined ? { usage: o.usage } : {}),
          ...(o.terminate !== undefined ? { terminate: o.terminate } : {}),
        };
        if (o.isError !== undefined) isError = o.isError;
      }
    } catch (err) {
      result = { content: [{ type: 'text', text: thrownMessage(err) }], details: {} };
      isError = true;
    }
  }
  return {
    content: result.content ?? [],
    details: result.details,
    ...(result.usage ? { usage: result.usage } : {}),
    ...(result.addedToolNames?.length ? { addedToolNames: result.addedToolNames } : {}),
    ...(result.terminate ? { terminate: true } : {}),
    isError,
    timestamp: Date.now(),
  };
}

/** A retryable failure a tool throws to have its call run again by the activity's retry policy. */
function isTransportFailure(err: unknown): err is ApplicationFailure {
  return err instanceof ApplicationFailure && err.type === ErrorType.ToolTransport && !err.nonRetryable;
}

function immediate(text: string, terminate = false): Preparation {
  return { status: 'immediate', outcome: { ...errorToolOutcome(text), ...(terminate ? { terminate: true } : {}) } };
}

/** An error tool result with `text` (`isError`, no details), stamped with the activity's clock. */
export function errorToolOutcome(text: string): ToolOutcome {
  return { content: [{ type: 'text', text }], details: {}, isError: true, timestamp: Date.now() };
}
