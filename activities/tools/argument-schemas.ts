/**
 * The ajv side of tool-argument validation: one ajv instance per JSON Schema dialect, a compile cache per `parameters`
 * schema, and checks of sub-schemas (union members, `$ref` targets) for the coercion passes.
 */
import { Ajv } from 'ajv';
import type { ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { thrownMessage } from '../../common/errors.js';

export interface ValidatableTool {
  name: string;
  /** A JSON Schema object (a TypeBox schema is one). */
  parameters: object;
}

type AjvInstance = Ajv | Ajv2019 | Ajv2020;
export type Check = (value: unknown) => boolean;
export type SchemaObject = Record<string, unknown>;

export interface SchemaEntry {
  /** The schema object the walk runs over (the first object seen with this content). */
  root: SchemaObject;
  ajv: AjvInstance;
  validate?: ValidateFunction;
  /** ajv's compile error for an invalid schema (cached so a broken schema is not recompiled on every call). */
  error?: string;
  /** Validators of sub-schemas, compiled on demand by the coercion passes (union members, `$ref` targets). */
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
  if (typeof dialect === 'string' && dialect.includes('json-schema.org/draft/2020-12/'))
    return (draft2020 ??= new Ajv2020(AJV_OPTIONS));
  if (typeof dialect === 'string' && dialect.includes('json-schema.org/draft/2019-09/'))
    return (draft2019 ??= new Ajv2019(AJV_OPTIONS));
  return (draft07 ??= new Ajv(AJV_OPTIONS));
}

/** Primary cache: one entry per schema object (tool definitions are long-lived registry objects). */
const entriesByObject = new WeakMap<object, SchemaEntry>();
/** Fallback for schemas that arrive as fresh objects with known content (e.g. after deserialization). */
const entriesByJson = new Map<string, SchemaEntry>();

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
    entry.error = thrownMessage(error);
  }
  return entry;
}

export function getEntry(tool: ValidatableTool): SchemaEntry {
  const schema = tool.parameters as SchemaObject;
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) {
    throw new Error(`Invalid parameters schema for tool "${tool.name}": schema must be an object`);
  }
  const entry = entryOf(schema);
  if (entry.error !== undefined || !entry.validate) {
    throw new Error(`Invalid parameters schema for tool "${tool.name}": ${entry.error ?? 'compilation failed'}`);
  }
  return entry;
}

/** ajv's compile error for a JSON Schema object (cached like {@link getEntry}'s), or undefined when it compiles. */
export function schemaCompileError(schema: object): string | undefined {
  if (!isPlainObject(schema)) return 'schema must be an object';
  const entry = entryOf(schema);
  return entry.error !== undefined || !entry.validate ? (entry.error ?? 'compilation failed') : undefined;
}

/** The cached entry of a schema object: by identity, else by content, else compiled now. */
function entryOf(schema: SchemaObject): SchemaEntry {
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
  return entry;
}

// ---------------------------------------------------------------------------------------------------------------------
// Sub-schema checks and local `$ref`s
// ---------------------------------------------------------------------------------------------------------------------

export function isPlainObject(value: unknown): value is Record<string, unknown> {
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
export function resolveRef(entry: SchemaEntry, ref: unknown): unknown {
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

/** Whether `value` passes the sub-schema `schema`; undefined when `schema` cannot be compiled on its own. */
export function passes(entry: SchemaEntry, schema: unknown, value: unknown): boolean | undefined {
  const check = subCheck(entry, schema);
  return check ? check(value) : undefined;
}
