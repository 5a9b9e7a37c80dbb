/**
 * Tool-argument validation (Pi's `validateToolArguments`, spec B.1 + B.3) on ajv.
 *
 * deep-clone the arguments → AJV-compatible coercion walk (B.3, with JSON-string repair) → validate with ajv →
 * return the coerced clone, or throw the Pi-shaped `Validation failed for tool "<name>": …` error.
 *
 * ajv runs without `coerceTypes`: the walk does every coercion, so the B.3 rules hold exactly (ajv's own coercion
 * differs, e.g. it turns "1" into `true`). Messages are ajv's, except `required` errors, which are merged per object
 * into Pi's `must have required properties a, b`.
 */
import { Ajv } from 'ajv';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';

export interface ValidatableTool {
  name: string;
  parameters: Record<string, unknown>;
}

export interface ValidatableToolCall {
  name: string;
  arguments: unknown;
}

type AjvInstance = Ajv | Ajv2019 | Ajv2020;
type Check = (value: unknown) => boolean;
type SchemaObject = Record<string, unknown>;

interface SchemaEntry {
  /** The schema object the walk runs over (the first object seen with this content). */
  root: SchemaObject;
  ajv: AjvInstance;
  validate?: ValidateFunction;
  /** ajv's compile error for an invalid schema (cached so a broken schema is not recompiled on every call). */
  error?: string;
  /** Validators of sub-schemas, compiled on demand by the walk (union members, JSON-string repair). */
  subs: WeakMap<object, Check | null>;
}

// ---------------------------------------------------------------------------------------------------------------------
// ajv instances and the compile cache
// ---------------------------------------------------------------------------------------------------------------------

/**
 * `allErrors` so every problem is reported at once; `strict: false` so vendor keywords (MCP, OpenAPI) are ignored;
 * `validateFormats: false` because no format set is loaded (unknown formats would otherwise log a warning each);
 * `addUsedSchema: false` so two tools whose schemas share an `$id` do not collide in the instance's registry.
 */
const AJV_OPTIONS = { allErrors: true, strict: false, validateFormats: false, addUsedSchema: false } as const;

let draft07: Ajv | undefined;
let draft2019: Ajv2019 | undefined;
let draft2020: Ajv2020 | undefined;

function ajvForDialect(dialect: unknown): AjvInstance {
  if (typeof dialect === 'string' && dialect.includes('json-schema.org/draft/2020-12/')) return (draft2020 ??= new Ajv2020(AJV_OPTIONS));
  if (typeof dialect === 'string' && dialect.includes('json-schema.org/draft/2019-09/')) return (draft2019 ??= new Ajv2019(AJV_OPTIONS));
  return (draft07 ??= new Ajv(AJV_OPTIONS));
}

/** Primary cache: one entry per schema object (tool definitions are long-lived registry objects). */
const entriesByObject = new WeakMap<object, SchemaEntry>();
/** Fallback for schemas that arrive as fresh objects with known content (e.g. after deserialization). */
const entriesByJson = new Map<string, SchemaEntry>();

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function compileRoot(schema: SchemaObject): SchemaEntry {
  const ajv = ajvForDialect(schema.$schema);
  const entry: SchemaEntry = { root: schema, ajv, subs: new WeakMap() };
  let target: SchemaObject = schema;
  if (typeof schema.$schema === 'string') {
    let known = false;
    try {
      known = ajv.getSchema(schema.$schema) !== undefined;
    } catch {
      known = false;
    }
    // A dialect this instance does not know (draft-04, draft-06, a vendor URL): validate with the instance's own.
    if (!known) {
      const { $schema: _dialect, ...rest } = schema;
      target = rest;
    }
  }
  try {
    entry.validate = ajv.compile(target);
  } catch (error) {
    entry.error = errorText(error);
  }
  return entry;
}

function getEntry(tool: ValidatableTool): SchemaEntry {
  const schema = tool.parameters;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new Error(`Invalid parameters schema for tool "${tool.name}": schema must be an object`);
  }
  let entry = entriesByObject.get(schema);
  if (!entry) {
    let json: string | undefined;
    try {
      json = JSON.stringify(schema);
    } catch {
      json = undefined;
    }
    entry = json === undefined ? undefined : entriesByJson.get(json);
    if (!entry) {
      entry = compileRoot(schema);
      if (json !== undefined) entriesByJson.set(json, entry);
    }
    entriesByObject.set(schema, entry);
  }
  if (entry.error !== undefined || !entry.validate) {
    throw new Error(`Invalid parameters schema for tool "${tool.name}": ${entry.error ?? 'compilation failed'}`);
  }
  return entry;
}

// ---------------------------------------------------------------------------------------------------------------------
// Sub-schema checks and local `$ref`s
// ---------------------------------------------------------------------------------------------------------------------

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function decodePointerSegment(segment: string): string {
  let decoded = segment;
  try {
    decoded = decodeURIComponent(segment);
  } catch {
    decoded = segment;
  }
  return decoded.replace(/~1/g, '/').replace(/~0/g, '~');
}

/** Resolves a local reference (`#`, `#/$defs/X`, `#/definitions/X`, any `#/…` pointer) against the root schema. */
function resolveRef(entry: SchemaEntry, ref: unknown): unknown {
  if (typeof ref !== 'string' || !ref.startsWith('#')) return undefined;
  if (ref === '#') return entry.root;
  if (!ref.startsWith('#/')) return undefined;
  let node: unknown = entry.root;
  for (const segment of ref.slice(2).split('/')) {
    const key = decodePointerSegment(segment);
    if (Array.isArray(node)) node = node[Number(key)];
    else if (isPlainObject(node) && Object.hasOwn(node, key)) node = node[key];
    else return undefined;
  }
  return node;
}

/** A sub-schema with `$ref`s is compiled with the root's `$defs`/`definitions` merged in, so `#/$defs/X` resolves. */
function withRootDefinitions(schema: SchemaObject, root: SchemaObject): SchemaObject {
  const out: SchemaObject = { ...schema };
  for (const key of ['$defs', 'definitions']) {
    const rootDefs = root[key];
    if (isPlainObject(rootDefs)) {
      const ownDefs = schema[key];
      out[key] = { ...rootDefs, ...(isPlainObject(ownDefs) ? ownDefs : {}) };
    }
  }
  return out;
}

function subCheck(entry: SchemaEntry, schema: unknown): Check | null {
  if (schema === true) return () => true;
  if (schema === false) return () => false;
  if (!isPlainObject(schema)) return null;
  if (schema === entry.root && entry.validate) {
    const validate = entry.validate;
    return (value) => validate(value) === true;
  }
  const cached = entry.subs.get(schema);
  if (cached !== undefined) return cached;
  let check: Check | null = null;
  try {
    let hasRef = false;
    try {
      hasRef = JSON.stringify(schema).includes('"$ref"');
    } catch {
      hasRef = false;
    }
    const validate = entry.ajv.compile(hasRef ? withRootDefinitions(schema, entry.root) : schema);
    check = (value) => validate(value) === true;
  } catch {
    check = null; // a member that cannot be compiled on its own never "validates"; the root validation decides
  }
  entry.subs.set(schema, check);
  return check;
}

function validatesAgainst(entry: SchemaEntry, schema: unknown, value: unknown): boolean {
  return subCheck(entry, schema)?.(value) ?? false;
}

// ---------------------------------------------------------------------------------------------------------------------
// The AJV-compatible coercion walk (B.3)
// ---------------------------------------------------------------------------------------------------------------------

function schemaTypes(schema: SchemaObject): string[] {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((type): type is string => typeof type === 'string');
  return [];
}

/** Own `type`, else the `type` of a local `$ref` target (so `anyOf: [{$ref: object}, {type: string}]` repairs JSON). */
function effectiveTypes(entry: SchemaEntry, schema: SchemaObject, depth = 0): string[] {
  const own = schemaTypes(schema);
  if (own.length > 0 || depth > 32) return own;
  const target = resolveRef(entry, schema.$ref);
  return isPlainObject(target) ? effectiveTypes(entry, target, depth + 1) : [];
}

function matchesJsonType(value: unknown, type: string): boolean {
  switch (type) {
    case 'number':
      return typeof value === 'number';
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value);
    case 'boolean':
      return typeof value === 'boolean';
    case 'string':
      return typeof value === 'string';
    case 'null':
      return value === null;
    case 'array':
      return Array.isArray(value);
    case 'object':
      return isPlainObject(value);
    default:
      return false;
  }
}

/** One primitive coercion toward `type`; returns the value itself when no rule applies. */
function coercePrimitive(value: unknown, type: string): unknown {
  switch (type) {
    case 'number': {
      if (value === null) return 0;
      if (typeof value === 'string' && value.trim() !== '') {
        const parsed = Number(value);
        if (Number.isFinite(parsed)) return parsed;
      }
      if (typeof value === 'boolean') return value ? 1 : 0;
      return value;
    }
    case 'integer': {
      if (value === null) return 0;
      if (typeof value === 'string' && value.trim() !== '') {
        const parsed = Number(value);
        if (Number.isInteger(parsed)) return parsed;
      }
      if (typeof value === 'boolean') return value ? 1 : 0;
      return value;
    }
    case 'boolean': {
      if (value === null) return false;
      if (value === 'true') return true;
      if (value === 'false') return false;
      if (value === 1) return true;
      if (value === 0) return false;
      return value;
    }
    case 'string': {
      if (value === null) return '';
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      return value;
    }
    case 'null':
      return value === '' || value === 0 || value === false ? null : value;
    default:
      return value;
  }
}

/**
 * JSON-string repair: a string given where the schema wants an object or array (and not a string) is parsed when it
 * looks like `{…}`/`[…]`, parses to the wanted kind, and — after coercion — validates against the schema.
 * Returns `undefined` when the string is left alone.
 */
function repairJsonString(entry: SchemaEntry, text: string, schema: unknown, ownTypes?: string[]): unknown {
  if (!isPlainObject(schema)) return undefined;
  const types = ownTypes ?? effectiveTypes(entry, schema);
  if (types.includes('string')) return undefined;
  const wantsObject = types.includes('object');
  const wantsArray = types.includes('array');
  if (!wantsObject && !wantsArray) return undefined;
  const trimmed = text.trim();
  const looksLikeObject = trimmed.startsWith('{') && trimmed.endsWith('}');
  const looksLikeArray = trimmed.startsWith('[') && trimmed.endsWith(']');
  if (!(wantsObject && looksLikeObject) && !(wantsArray && looksLikeArray)) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    return undefined;
  }
  if (!(wantsObject && isPlainObject(parsed)) && !(wantsArray && Array.isArray(parsed))) return undefined;
  const coerced = coerceWithSchema(entry, parsed, schema, new Set());
  return validatesAgainst(entry, schema, coerced) ? coerced : undefined;
}

function coerceUnion(entry: SchemaEntry, value: unknown, members: unknown[], active: Set<object>): unknown {
  // (i) a string that is the JSON text of an object/array member wins over a string member
  if (typeof value === 'string') {
    for (const member of members) {
      const repaired = repairJsonString(entry, value, member);
      if (repaired !== undefined) return repaired;
    }
  }
  // (ii) a value that already validates against some member is kept as is
  for (const member of members) {
    if (validatesAgainst(entry, member, value)) return value;
  }
  // (iii) the first member a coerced copy validates against
  for (const member of members) {
    const coerced = coerceWithSchema(entry, structuredClone(value), member, active);
    if (validatesAgainst(entry, member, coerced)) return coerced;
  }
  return value;
}

/** Writes an own data property (also for a key named `__proto__` coming from parsed JSON). */
function setOwn(target: Record<string, unknown> | unknown[], key: string | number, value: unknown): void {
  if ((target as Record<string | number, unknown>)[key] === value) return;
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

/**
 * Coerces `value` toward `schema`, mutating objects/arrays in place; returns the (possibly replaced) value.
 * `active` holds the schemas being applied to this same value (through `$ref`/`allOf`/unions) to stop `$ref` cycles.
 */
function coerceWithSchema(entry: SchemaEntry, value: unknown, schema: unknown, active: Set<object>): unknown {
  if (!isPlainObject(schema) || active.has(schema)) return value;
  active.add(schema);
  try {
    let next = value;

    const refTarget = resolveRef(entry, schema.$ref);
    if (refTarget !== undefined) next = coerceWithSchema(entry, next, refTarget, active);

    if (Array.isArray(schema.allOf)) {
      for (const member of schema.allOf) next = coerceWithSchema(entry, next, member, active);
    }
    if (Array.isArray(schema.anyOf)) next = coerceUnion(entry, next, schema.anyOf, active);
    if (Array.isArray(schema.oneOf)) next = coerceUnion(entry, next, schema.oneOf, active);

    const types = schemaTypes(schema);
    const matchesListedType = types.length > 1 && types.some((type) => matchesJsonType(next, type));
    if (types.length > 0 && !matchesListedType) {
      for (const type of types) {
        const candidate = coercePrimitive(next, type);
        if (candidate !== next) {
          next = candidate;
          break;
        }
      }
    }

    if (typeof next === 'string') {
      const repaired = repairJsonString(entry, next, schema, types);
      if (repaired !== undefined) next = repaired;
    }

    if (isPlainObject(next) && (types.length === 0 || types.includes('object'))) {
      const properties = isPlainObject(schema.properties) ? schema.properties : undefined;
      if (properties) {
        for (const key of Object.keys(properties)) {
          if (!Object.hasOwn(next, key)) continue;
          setOwn(next, key, coerceWithSchema(entry, next[key], properties[key], new Set()));
        }
      }
      const additional = schema.additionalProperties;
      if (isPlainObject(additional)) {
        for (const key of Object.keys(next)) {
          if (properties && Object.hasOwn(properties, key)) continue;
          setOwn(next, key, coerceWithSchema(entry, next[key], additional, new Set()));
        }
      }
    }

    if (Array.isArray(next) && (types.length === 0 || types.includes('array'))) {
      const items = schema.items;
      const prefixItems = schema.prefixItems;
      const positional = Array.isArray(prefixItems) ? prefixItems : Array.isArray(items) ? items : undefined;
      const rest = Array.isArray(prefixItems) && isPlainObject(items) ? items : positional ? undefined : items;
      for (let index = 0; index < next.length; index++) {
        const itemSchema = positional && index < positional.length ? positional[index] : rest;
        if (!isPlainObject(itemSchema)) continue;
        setOwn(next, index, coerceWithSchema(entry, next[index], itemSchema, new Set()));
      }
    }

    return next;
  } finally {
    active.delete(schema);
  }
}

// ---------------------------------------------------------------------------------------------------------------------
// Error formatting (B.1 steps 6–7)
// ---------------------------------------------------------------------------------------------------------------------

/** ajv instance path (`/edits/0/newText`) as the dotted path the model sees (`edits.0.newText`); `''` stays `''`. */
function dottedPath(instancePath: string): string {
  if (instancePath === '') return '';
  return instancePath
    .replace(/^\//, '')
    .split('/')
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

/**
 * The body of the validation error: one `  - <path>: <message>` line per ajv error, identical lines once.
 * `required` errors of one object (same instance path and schema location) become one line
 * `  - <parent>.<first missing>: must have required properties a, b`. No errors → `Unknown validation error`.
 */
export function formatValidationErrors(errors: readonly ErrorObject[] | null | undefined): string {
  type Line = { path: string; message: string } | { required: { base: string; missing: string[] } };
  const lines: Line[] = [];
  const requiredGroups = new Map<string, { base: string; missing: string[] }>();
  for (const error of errors ?? []) {
    const missing = (error.params as { missingProperty?: unknown } | undefined)?.missingProperty;
    if (error.keyword === 'required' && typeof missing === 'string') {
      const key = `${error.instancePath}\u0000${error.schemaPath}`;
      const group = requiredGroups.get(key);
      if (group) {
        if (!group.missing.includes(missing)) group.missing.push(missing);
      } else {
        const created = { base: dottedPath(error.instancePath), missing: [missing] };
        requiredGroups.set(key, created);
        lines.push({ required: created });
      }
      continue;
    }
    lines.push({ path: dottedPath(error.instancePath) || 'root', message: error.message ?? `must pass "${error.keyword}" keyword validation` });
  }
  const rendered = new Set<string>();
  for (const line of lines) {
    if ('required' in line) {
      const { base, missing } = line.required;
      rendered.add(`  - ${base ? `${base}.${missing[0]}` : missing[0]}: must have required properties ${missing.join(', ')}`);
    } else {
      rendered.add(`  - ${line.path}: ${line.message}`);
    }
  }
  return rendered.size > 0 ? [...rendered].join('\n') : 'Unknown validation error';
}

function isNonNullObject(value: unknown): value is object {
  return typeof value === 'object' && value !== null;
}

/**
 * Validates (and coerces) a tool call's arguments against the tool's JSON Schema `parameters`.
 *
 * Returns a coerced deep copy (the call's arguments are never mutated). Throws `Error`:
 * - `Validation failed for tool "<call name>":\n  - <path>: <message>…\n\nReceived arguments:\n<JSON, 2-space indent>`;
 * - `Invalid parameters schema for tool "<tool name>": <ajv message>` when ajv cannot compile the schema.
 *
 * Pi quirk kept (B.1 9a): when the top-level arguments are not an object and the coercion walk changes them, the
 * coerced value is returned if it validates and the uncoerced value otherwise — without throwing.
 */
export function validateToolArguments(tool: ValidatableTool, toolCall: ValidatableToolCall): unknown {
  const entry = getEntry(tool);
  const validate = entry.validate as ValidateFunction;
  const args: unknown = structuredClone(toolCall.arguments);
  const coerced = coerceWithSchema(entry, args, entry.root, new Set());

  if (coerced !== args && !(isNonNullObject(args) && isNonNullObject(coerced))) {
    return validate(coerced) ? coerced : args;
  }
  if (validate(coerced)) return coerced;

  const body = formatValidationErrors(validate.errors);
  throw new Error(
    `Validation failed for tool "${toolCall.name}":\n${body}\n\nReceived arguments:\n${JSON.stringify(toolCall.arguments, null, 2)}`,
  );
}
