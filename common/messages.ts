/**
 * Message shapes of Pi / pi-ai (`@earendil-works/pi-ai` types), restricted to what crosses Keel's
 * workflow boundary. Plain JSON only: transcripts are interchangeable with Pi. Each type is derived from its JSON Schema
 * in `message-schemas.ts` (one source for both).
 */
import type { Static } from 'typebox';
import type {
  ASSISTANT_MESSAGE_SCHEMA,
  IMAGE_CONTENT_SCHEMA,
  STOP_REASON_SCHEMA,
  TEXT_CONTENT_SCHEMA,
  THINKING_CONTENT_SCHEMA,
  TOOL_CALL_SCHEMA,
  TOOL_RESULT_MESSAGE_SCHEMA,
  USAGE_SCHEMA,
  USER_MESSAGE_SCHEMA,
} from './message-schemas.js';

/** One object type with the fields of an intersection (so a derived type reads as the plain shape it is). */
type Fields<T> = { [K in keyof T]: T[K] };

export type TextContent = Static<typeof TEXT_CONTENT_SCHEMA>;
export type ThinkingContent = Static<typeof THINKING_CONTENT_SCHEMA>;
export type ImageContent = Static<typeof IMAGE_CONTENT_SCHEMA>;
export type ToolCall = Static<typeof TOOL_CALL_SCHEMA>;
export type Usage = Static<typeof USAGE_SCHEMA>;
export type StopReason = Static<typeof STOP_REASON_SCHEMA>;

/** A user message in the transcript: the workflow stamps `timestamp` (optional in what a client sends). */
export type UserMessage = Fields<Omit<Static<typeof USER_MESSAGE_SCHEMA>, 'timestamp'> & { timestamp: number }>;

export type AssistantMessage = Static<typeof ASSISTANT_MESSAGE_SCHEMA>;

/** `details`: the tool's own data (any JSON), not validated. */
export type ToolResultMessage = Fields<Static<typeof TOOL_RESULT_MESSAGE_SCHEMA> & { details?: unknown }>;

export type Message = UserMessage | AssistantMessage | ToolResultMessage;

export function emptyUsage(): Usage {
  return {
    input: 0,
    output: 0,
    cacheRead: 0,
    cacheWrite: 0,
    totalTokens: 0,
    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
  };
}

export function addUsage(a: Usage, b: Usage | undefined): Usage {
  if (!b) return a;
  return {
    input: a.input + b.input,
    output: a.output + b.output,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite: a.cacheWrite + b.cacheWrite,
    totalTokens: a.totalTokens + b.totalTokens,
    cost: {
      input: a.cost.input + b.cost.input,
      output: a.cost.output + b.cost.output,
      cacheRead: a.cost.cacheRead + b.cost.cacheRead,
      cacheWrite: a.cost.cacheWrite + b.cost.cacheWrite,
      total: a.cost.total + b.cost.total,
    },
  };
}

/** The text of a message as Pi's scripted models see it: text blocks joined by "\n". */
export function messageText(message: Message): string {
  if (typeof message.content === 'string') return message.content;
  return message.content
    .filter((b): b is TextContent => b.type === 'text')
    .map((b) => b.text)
    .join('\n');
}

/** The last assistant message of `transcript` at or after index `from` (a run's final answer: its `messageText`). */
export function lastAssistant(transcript: Message[], from = 0): AssistantMessage | undefined {
  for (let i = transcript.length - 1; i >= from; i--)
    if (transcript[i]?.role === 'assistant') return transcript[i] as AssistantMessage;
  return undefined;
}

export function toolCallsOf(message: AssistantMessage): ToolCall[] {
  return message.content.filter((b): b is ToolCall => b.type === 'toolCall');
}
