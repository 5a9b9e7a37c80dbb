/**
 * Tool-argument validation (pi-ai 1.6.0's `validateToolArguments`) on ajv:
 *
 * a call carrying `argumentsError` (its streamed JSON did not parse) is refused → the arguments are coerced with Pi's
 * rules (`coerce-arguments.ts`: optional nulls dropped, TypeBox conversions, ajv-style primitive coercion; no
 * JSON-string repair) → validated with ajv → the coerced copy is returned, or the Pi-shaped error is thrown.
 *
 * ajv runs without `coerceTypes`: the passes do every coercion. Messages are ajv's (`validation-errors.ts`).
 */
import type { ValidateFunction } from 'ajv';
import { getEntry, type ValidatableTool } from './argument-schemas.js';
import { coerceArguments } from './coerce-arguments.js';
import { formatValidationErrors } from './validation-errors.js';

export type { ValidatableTool } from './argument-schemas.js';
export { formatValidationErrors } from './validation-errors.js';

export interface ValidatableToolCall {
  name: string;
  arguments: unknown;
  /** Set by pi-ai when the model's arguments text was not a valid JSON object (e.g. cut off): the call is refused. */
  argumentsError?: string;
}

/** Pi's refusal of a call whose arguments did not parse: `Invalid arguments for tool "<name>": <argumentsError>`. */
export function invalidArgumentsText(name: string, argumentsError: string): string {
  return `Invalid arguments for tool "${name}": ${argumentsError}`;
}

/**
 * Validates (and coerces) a tool call's arguments against the tool's JSON Schema `parameters`.
 *
 * Returns the coerced value (a copy along the changed paths; the call's arguments are never modified). Throws `Error`:
 * - {@link invalidArgumentsText} when the call carries `argumentsError` (checked first, before the schema);
 * - `Validation failed for tool "<call name>":\n  - <path>: <message>…\n\nReceived arguments:\n<JSON, 2-space indent>`;
 * - `Invalid parameters schema for tool "<tool name>": <ajv message>` when ajv cannot compile the schema.
 */
export function validateToolArguments(tool: ValidatableTool, toolCall: ValidatableToolCall): unknown {
  if (toolCall.argumentsError) throw new Error(invalidArgumentsText(toolCall.name, toolCall.argumentsError));
  const entry = getEntry(tool);
  const validate = entry.validate as ValidateFunction;
  const coerced = coerceArguments(entry, structuredClone(toolCall.arguments));
  if (validate(coerced)) return coerced;
  throw new Error(
    `Validation failed for tool "${toolCall.name}":\n${formatValidationErrors(validate.errors)}\n\nReceived arguments:\n${JSON.stringify(toolCall.arguments, null, 2)}`,
  );
}
