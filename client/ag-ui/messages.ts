/**
 * Keel's transcript as AG-UI messages, with the ids the endpoint's events use, so a `MESSAGES_SNAPSHOT` replaces
 * exactly what the live events built: transcript message `i` is `keel-<i>` (a user message, a tool result, or the
 * assistant message that carries the tool calls of message `i`); content block `b` of assistant message `i` is
 * `keel-<i>-<b>` (an assistant text message for a text block, a reasoning message for a thinking block).
 */
import type { Message as AgUiMessage, ToolCall as AgUiToolCall } from '@ag-ui/core';
import { blockText } from '../../common/stream.js';
import { messageText, type AssistantMessage, type Message } from '../../common/messages.js';

/** The AG-UI id of transcript message `i` (and the parent of its tool calls). */
export const messageId = (i: number): string => `keel-${i}`;

/** The AG-UI id of content block `b` of assistant message `i`. */
export const blockId = (i: number, b: number): string => `keel-${i}-${b}`;

/** The arguments of a tool call as AG-UI carries them: JSON text. */
export const argsText = (args: unknown): string => (typeof args === 'string' ? args : JSON.stringify(args ?? {}));

/** Assistant message `i`'s blocks as AG-UI messages (texts, reasoning, then one carrier of its tool calls). */
export function assistantMessages(i: number, m: Pick<AssistantMessage, 'content'>): AgUiMessage[] {
  const out: AgUiMessage[] = [];
  const toolCalls: AgUiToolCall[] = [];
  m.content.forEach((block, b) => {
    if (block.type === 'text') out.push({ id: blockId(i, b), role: 'assistant', content: block.text });
    else if (block.type === 'thinking') out.push({ id: blockId(i, b), role: 'reasoning', content: blockText(block) });
    else
      toolCalls.push({
        id: block.id,
        type: 'function',
        function: { name: block.name, arguments: argsText(block.arguments) },
      });
  });
  if (toolCalls.length) out.push({ id: messageId(i), role: 'assistant', toolCalls });
  return out;
}

/** Transcript message `i` as AG-UI messages. */
export function agUiMessages(i: number, m: Message): AgUiMessage[] {
  if (m.role === 'assistant') return assistantMessages(i, m);
  if (m.role === 'toolResult')
    return [{ id: messageId(i), role: 'tool', toolCallId: m.toolCallId, content: messageText(m) }];
  return [{ id: messageId(i), role: 'user', content: messageText(m) }];
}

/** A transcript as AG-UI messages. */
export const transcriptMessages = (transcript: Message[]): AgUiMessage[] =>
  transcript.flatMap((m, i) => agUiMessages(i, m));
