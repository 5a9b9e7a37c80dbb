/**
 * Tool-argument validation (pi-ai 1.6.0's `validateToolArguments`) on ajv:
 *
 * a call carrying `argumentsError` (its streamed JSON did not parse) is refused → the arguments are coerced with Pi's
 * rules (`coerce-arguments.ts`: optional nulls dropped, TypeBox conversions, ajv-style primitive coercion; no
 * JSON-string repair) → validated with ajv → the coerced copy is returned, or the Pi-shaped error is thrown.
 *
 * ajv runs without `coerceTypes`: the passes do every coercion. Messages are ajv's (`validation-errors.ts`), except
 * for arguments of the wrong type as a whole, which get Pi's line (`root: expected object, got string`).
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
  const problems = rootTypeProblem(entry.root, coerced, validate.errors) ?? formatValidationErrors(validate.errors);
  throw new Error(
    `Validation failed for tool "${toolCall.name}":\n${problems}\n\nReceived arguments:\n${JSON.stringify(toolCall.arguments, null, 2)}`,
  );
}

/**
 * Arguments of the wrong type as a whole (a JSON string some models send unparsed instead of an object): Pi's line,
 * `  - root: expected object, got string`, word for word (pi-schema stops at a type mismatch, so it is the only one).
 * Undefined when the root's type is not what failed.
 */
function rootTypeProblem(
  root: Record<string, unknown>,
  value: unknown,
  errors: ValidateFunction['errors'],
): string | undefined {
  if (!errors?.some((e) => e.keyword === 'type' && e.instancePath === '' && e.schemaPath === '#/type'))
    return undefined;
  const types = Array.isArray(root.type) ? root.type : [root.type];
  if (!types.every((t) => typeof t === 'string')) return undefined;
  return `  - root: expected ${types.join(' or ')}, got ${typeName(value)}`;
}

/** pi-schema's name of a value's JSON type (`integer` for a whole number). */
function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number' && Number.isInteger(v)) return 'integer';
  if (typeof v === 'number' && !Number.isFinite(v)) return String(v);
  return typeof v;
}
