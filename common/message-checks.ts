/**
 * The workflow's checks of the model activity's result (workflows/agent/model-step.ts, workflows/failure-outcomes.ts),
 * on the assistant-message and usage schemas of `message-schemas.ts` (`validate-messages.ts`). Each returns the first
 * problem, worded as every refusal is (`validate-errors.ts`, e.g. `usage.cost.total: must be number`), or `undefined`
 * when the value is well-formed. Pure functions: safe in workflow code.
 */
import type { AssistantMessage, UserMessage } from './messages.js';
import { assistantMessageErrors, usageErrors } from './validate-messages.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The first problem of a usage (`usage.input: must be number`). */
export function usageProblem(u: unknown): string | undefined {
  return usageErrors(u)[0];
}

/**
 * Whether a tool call of the message has its arguments as a string (a JSON text some models and gateways send unparsed).
 */
export function hasStringArguments(m: unknown): boolean {
  return stringArgumentsAt(m) !== undefined;
}

/** The index of the first tool call whose arguments are a string. */
function stringArgumentsAt(m: unknown): number | undefined {
  if (!isObject(m) || !Array.isArray(m.content)) return undefined;
  const i = m.content.findIndex((b) => isObject(b) && b.type === 'toolCall' && typeof b.arguments === 'string');
  return i < 0 ? undefined : i;
}

/**
 * The model activity's message, as the loop is about to append it. `stringArguments`: a tool call's `arguments` may
 * be a string (kept as sent; the call's validation answers it), else it must be an object.
 */
export function assistantMessageProblem(m: unknown, o: { stringArguments?: boolean } = {}): string | undefined {
  const problem = assistantMessageErrors(m)[0];
  if (problem !== undefined || o.stringArguments) return problem;
  const at = stringArgumentsAt(m);
  return at === undefined ? undefined : `content.${at}.arguments: must be object`;
}

export type { AssistantMessage, UserMessage };
