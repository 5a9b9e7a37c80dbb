/**
 * Plain structural checks of messages, for the places where ajv cannot run or is too heavy: the workflow's signal
 * handlers and the model activity's result as the workflow receives it. Each returns the first problem as text the
 * sender can act on, or `undefined` when the value is well-formed. Pure functions: safe in workflow code.
 */
import type { AssistantMessage, UserMessage } from './messages.js';

const STOP_REASONS = ['stop', 'length', 'toolUse', 'error', 'aborted'];
const USAGE_FIELDS = ['input', 'output', 'cacheRead', 'cacheWrite', 'totalTokens'] as const;
const COST_FIELDS = ['input', 'output', 'cacheRead', 'cacheWrite', 'total'] as const;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

function blockProblem(b: unknown, i: number, allowed: string[], stringArguments = false): string | undefined {
  if (!isObject(b)) return `content[${i}] must be an object`;
  if (!allowed.includes(b.type as string)) return `content[${i}].type must be one of ${allowed.join(', ')}`;
  if (b.type === 'text' && typeof b.text !== 'string') return `content[${i}].text must be a string`;
  if (b.type === 'thinking' && typeof b.thinking !== 'string') return `content[${i}].thinking must be a string`;
  if (b.type === 'image' && (typeof b.data !== 'string' || typeof b.mimeType !== 'string'))
    return `content[${i}] (image) needs string data and mimeType`;
  if (b.type !== 'toolCall') return undefined;
  const args = isObject(b.arguments) || (stringArguments && typeof b.arguments === 'string');
  if (typeof b.id !== 'string' || typeof b.name !== 'string' || !args) {
    return `content[${i}] (toolCall) needs string id and name and an arguments object`;
  }
  return undefined;
}

/** A `followUp`/`steer` entry: a string, or `{ role: "user", content: string | (text | image)[] , timestamp? }`. */
export function incomingMessageProblem(m: unknown): string | undefined {
  if (typeof m === 'string') return undefined;
  if (!isObject(m)) return 'expected a string or { role: "user", content }';
  if (m.role !== 'user') return 'role must be "user"';
  if (m.timestamp !== undefined && !isNumber(m.timestamp)) return 'timestamp must be a number';
  if (typeof m.content === 'string') return undefined;
  if (!Array.isArray(m.content)) return 'content must be a string or an array of text and image blocks';
  for (let i = 0; i < m.content.length; i++) {
    const p = blockProblem(m.content[i], i, ['text', 'image']);
    if (p) return p;
  }
  return undefined;
}

export function usageProblem(u: unknown): string | undefined {
  if (!isObject(u)) return 'usage must be an object';
  for (const k of USAGE_FIELDS) if (!isNumber(u[k])) return `usage.${k} must be a number`;
  if (!isObject(u.cost)) return 'usage.cost must be an object';
  for (const k of COST_FIELDS) if (!isNumber(u.cost[k])) return `usage.cost.${k} must be a number`;
  return undefined;
}

/**
 * Whether a tool call of the message has its arguments as a string (a JSON text some models and gateways send unparsed).
 */
export function hasStringArguments(m: unknown): boolean {
  return (
    isObject(m) &&
    Array.isArray(m.content) &&
    m.content.some((b) => isObject(b) && b.type === 'toolCall' && typeof b.arguments === 'string')
  );
}

/**
 * The model activity's message, as the loop is about to append it. `stringArguments`: a tool call's `arguments` may
 * be a string (kept as sent; the call's validation answers it), else it must be an object.
 */
export function assistantMessageProblem(m: unknown, o: { stringArguments?: boolean } = {}): string | undefined {
  if (!isObject(m) || m.role !== 'assistant') return 'expected an assistant message';
  if (!Array.isArray(m.content)) return 'content must be an array';
  for (let i = 0; i < m.content.length; i++) {
    const p = blockProblem(m.content[i], i, ['text', 'thinking', 'toolCall'], o.stringArguments);
    if (p) return p;
  }
  if (!STOP_REASONS.includes(m.stopReason as string)) return `stopReason must be one of ${STOP_REASONS.join(', ')}`;
  if (m.errorMessage !== undefined && typeof m.errorMessage !== 'string') return 'errorMessage must be a string';
  return usageProblem(m.usage);
}

export type { AssistantMessage, UserMessage };
