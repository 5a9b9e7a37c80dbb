import type { ToolCall, ToolResultMessage } from './messages.js';
import type { ToolOutcome } from './wire.js';

/** The toolResult message for a call's outcome (Pi's shapes; docs/architecture.md#events). Built the same way by workflow and activities. */
export function toolResultMessage(call: Pick<ToolCall, 'id' | 'name'>, o: ToolOutcome): ToolResultMessage {
  return {
    role: 'toolResult',
    toolCallId: call.id,
    toolName: call.name,
    content: o.content ?? [],
    details: o.details,
    ...(o.usage ? { usage: o.usage } : {}),
    ...(o.addedToolNames?.length ? { addedToolNames: o.addedToolNames } : {}),
    isError: o.isError,
    timestamp: o.timestamp,
  };
}
