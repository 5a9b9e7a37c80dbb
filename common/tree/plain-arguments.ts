/**
 * Whether a sub-agent call's arguments are valid as they are, decided in the workflow (0.8.0, issue 35 item 5): such a
 * call starts its child without the `prepareToolCalls` activity. Deliberately narrow — true only where the activity's
 * validation (activities/tools/validate-arguments.ts: Pi's coercion passes, then ajv) would accept the arguments and
 * leave them unchanged: a schema of `type`, `properties`, `required`, `items`, `additionalProperties: false` and the
 * annotations `description` / `title` only, every value of exactly its declared type, no `null`, no property the schema
 * does not name. Anything else is left to the activity, whose texts stay the only validation errors a call gets.
 * Plain and deterministic.
 */

const ANNOTATIONS = new Set(['description', 'title']);
const OBJECT_KEYWORDS = new Set(['type', 'properties', 'required', 'additionalProperties', ...ANNOTATIONS]);
const ARRAY_KEYWORDS = new Set(['type', 'items', ...ANNOTATIONS]);
const PRIMITIVE_KEYWORDS = new Set(['type', ...ANNOTATIONS]);

type Schema = Record<string, unknown>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * True when `args` plainly satisfies `schema` (see the file's comment); false means "ask the activity", not "invalid".
 */
export function plainlyValid(schema: unknown, args: unknown): boolean {
  return isObject(schema) && schema.type === 'object' && valid(schema, args, 0);
}

/** Nesting deeper than this is left to the activity. */
const MAX_DEPTH = 16;

function valid(schema: Schema, value: unknown, depth: number): boolean {
  if (depth > MAX_DEPTH) return false;
  switch (schema.type) {
    case 'object':
      return onlyKeywords(schema, OBJECT_KEYWORDS) && validObject(schema, value, depth);
    case 'array':
      return onlyKeywords(schema, ARRAY_KEYWORDS) && validArray(schema, value, depth);
    case 'string':
      return onlyKeywords(schema, PRIMITIVE_KEYWORDS) && typeof value === 'string';
    case 'boolean':
      return onlyKeywords(schema, PRIMITIVE_KEYWORDS) && typeof value === 'boolean';
    case 'number':
      return onlyKeywords(schema, PRIMITIVE_KEYWORDS) && typeof value === 'number' && Number.isFinite(value);
    case 'integer':
      return onlyKeywords(schema, PRIMITIVE_KEYWORDS) && Number.isSafeInteger(value);
    default:
      return false;
  }
}

function onlyKeywords(schema: Schema, allowed: Set<string>): boolean {
  return Object.keys(schema).every((k) => allowed.has(k)) && annotationsAreText(schema);
}

function annotationsAreText(schema: Schema): boolean {
  return [...ANNOTATIONS].every((k) => schema[k] === undefined || typeof schema[k] === 'string');
}

function validObject(schema: Schema, value: unknown, depth: number): boolean {
  if (!isObject(value)) return false;
  const properties = schema.properties ?? {};
  const required = schema.required ?? [];
  if (!isObject(properties) || !Array.isArray(required)) return false;
  if (schema.additionalProperties !== undefined && schema.additionalProperties !== false) return false;
  if (!required.every((r) => typeof r === 'string' && Object.hasOwn(properties, r) && Object.hasOwn(value, r)))
    return false;
  return Object.entries(value).every(([k, v]) => {
    const p = Object.hasOwn(properties, k) ? properties[k] : undefined;
    return isObject(p) && valid(p, v, depth + 1);
  });
}

function validArray(schema: Schema, value: unknown, depth: number): boolean {
  if (!Array.isArray(value)) return false;
  const items = schema.items;
  return isObject(items) && value.every((v) => valid(items, v, depth + 1));
}
