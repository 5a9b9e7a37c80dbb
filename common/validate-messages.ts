/**
 * The checks of a message against its schema (`message-schemas.ts`), wherever it enters: the client before it sends,
 * the `followUp`/`steer` Update validators (`incomingMessageErrors` in updates.ts), the signal handlers
 * (`toUserMessages` in workflows/agent/incoming.ts), the model activity's output and the workflow's check of it
 * (`message-checks.ts`). One line per problem in the one wording of `validate-errors.ts`, `<path>: <what is wrong>`
 * (`followUp.0.content: is required`); empty when valid. Runs the code `npm run gen-schemas` generates (no ajv at run
 * time): safe in workflow code.
 */
import { check } from './validate-errors.js';
import { validateAssistantMessage, validateIncomingMessage, validateUsage } from './message-validators.generated.js';

/** A prompt or `followUp`/`steer` entry: text, or a user message `{ role: 'user', content, timestamp? }`. */
export function incomingMessageLines(value: unknown, label: string): string[] {
  return check(validateIncomingMessage, value, { label, userContent: /^content\.\d+$/ });
}

/**
 * A `followUp`/`steer` argument: one entry (labelled `label`) or a list of them (entry i labelled `<label>.<i>`, as
 * the run input's `prompt.<i>`).
 */
export function incomingMessagesErrors(value: unknown, label = 'message'): string[] {
  if (!Array.isArray(value)) return incomingMessageLines(value, label);
  return value.flatMap((m, i) => incomingMessageLines(m, `${label}.${i}`));
}

/** A complete assistant message as a model provider must return it. */
export function assistantMessageErrors(value: unknown, label = ''): string[] {
  return check(validateAssistantMessage, value, { label, root: 'message' });
}

/** Usage as a model call reports it (every count and cost a number). */
export function usageErrors(value: unknown, label = 'usage'): string[] {
  return check(validateUsage, value, { label });
}
