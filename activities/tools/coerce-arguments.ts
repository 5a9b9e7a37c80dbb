/**
 * Coercion of a model's tool-call arguments toward the tool's schema, with the rules of the Pi Keel pins
 * (`@earendil-works/pi-schema`'s `Coercer`, used by pi-ai 1.6.0's `validateToolArguments`), on ajv checks.
 *
 * Three passes, in this order:
 * 1. Optional nulls: a `null` in an optional property (not `required`, not a `$ref`) whose schema rejects `null` is
 *    dropped, as if omitted.
 * 2. TypeBox's `Value.Convert` rules keyed on JSON Schema structure (`$ref`, `const`, `enum`, `anyOf`/`oneOf`,
 *    `allOf`, `type`, `items`/`prefixItems`, `properties`/`patternProperties`/`additionalProperties`): `null` → `"null"`
 *    for a string, `"3.5"` → 3 for an integer, `"true"` → 1 for a number, a single value → a one-item array, and a
 *    union takes the first branch whose conversion the union accepts.
 * 3. Primitive coercion by `type` (also type arrays), as ajv's `coerceTypes`: what pass 2 left.
 *
 * A JSON string is never parsed into an object or array. Every pass is copy-on-write: the input is never modified and
 * comes back as the same reference when nothing changes. A value that cannot be coerced stays; validation reports it.
 */
import {
  isPlainObject,
  passes as schemaPasses,
  resolveRef,
  type SchemaEntry,
  type SchemaObject,
} from './argument-schemas.js';

type Result = { value: unknown } | undefined;

/** `value` coerced toward the root schema of `entry` (the three passes). */
export function coerceArguments(entry: SchemaEntry, value: unknown): unknown {
  return new Coercer(entry).coerce(value);
}

class Coercer {
  /** (node, value) pairs being converted through a re-entry point (`$ref`, single-value wrap), to cut cycles. */
  private readonly entered: unknown[] = [];

  constructor(private readonly entry: SchemaEntry) {}

  coerce(value: unknown): unknown {
    const root = this.entry.root;
    return this.coerceTypes(this.convert(root, this.dropOptionalNulls(value, root)), root);
  }

  private passes(node: unknown, value: unknown): boolean | undefined {
    return schemaPasses(this.entry, node, value);
  }

  private reenter(node: SchemaObject, value: unknown): unknown {
    const entered = this.entered;
    for (let i = 0; i < entered.length; i += 2)
      if (entered[i] === node && Object.is(entered[i + 1], value)) return value;
    entered.push(node, value);
    try {
      return this.convert(node, value);
    } finally {
      entered.length -= 2;
    }
  }

  // Pass 1: optional nulls -------------------------------------------------------------------------------------------

  private dropOptionalNulls(value: unknown, schema: unknown): unknown {
    if (!isPlainObject(schema)) return value;
    if (Array.isArray(value)) {
      return mapItems(value, (item, i) => {
        const itemSchema = itemSchemaAt(schema, i);
        return itemSchema === undefined ? item : this.dropOptionalNulls(item, itemSchema);
      });
    }
    if (!isPlainObject(value)) return value;
    const properties = isPlainObject(schema.properties) ? schema.properties : {};
    const patterns = patternsOf(schema);
    const additional = isPlainObject(schema.additionalProperties) ? schema.additionalProperties : undefined;
    if (patterns.length === 0 && additional === undefined && !isPlainObject(schema.properties)) return value;
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    let out: Record<string, unknown> | undefined;
    const set = (key: string, next: unknown) => {
      if (next === (out ?? value)[key]) return;
      out ??= { ...value };
      out[key] = next;
    };
    for (const [key, property] of Object.entries(properties)) {
      if (!Object.hasOwn(value, key)) continue;
      const isRef = isPlainObject(property) && typeof property.$ref === 'string';
      if (value[key] === null && !required.has(key) && !isRef && this.passes(property, null) === false) {
        out ??= { ...value };
        delete out[key];
        continue;
      }
      set(key, this.dropOptionalNulls(value[key], property));
    }
    if (patterns.length > 0 || additional !== undefined) {
      eachExtraMember(value, properties, patterns, additional, (key, schema, fromOut) =>
        set(key, this.dropOptionalNulls(fromOut ? (out ?? value)[key] : value[key], schema)),
      );
    }
    return out ?? value;
  }

  // Pass 2: TypeBox's conversion rules -------------------------------------------------------------------------------

  private convert(node: unknown, value: unknown): unknown {
    if (!isPlainObject(node)) return value;
    if (typeof node.$ref === 'string') {
      const target = resolveRef(this.entry, node.$ref);
      return isPlainObject(target) ? this.reenter(target, value) : value;
    }
    return this.convertNode(node, value);
  }

  private convertNode(node: SchemaObject, value: unknown): unknown {
    if (Object.hasOwn(node, 'const')) return convertLiteral(node.const, value);
    if (Array.isArray(node.enum)) return this.convertEnum(node, node.enum, value);
    if (Array.isArray(node.anyOf)) return this.convertUnion(node, node.anyOf, value);
    if (Array.isArray(node.oneOf)) return this.convertUnion(node, node.oneOf, value);
    if (Array.isArray(node.allOf)) {
      let next = value;
      for (const member of node.allOf) next = this.convert(member, next);
      return this.convertMembers(node, next);
    }
    switch (node.type) {
      case 'string':
        return orValue(tryString(value), value);
      case 'number':
        return orValue(tryNumber(value), value);
      case 'integer': {
        const result = tryNumber(value);
        return result === undefined ? value : Math.trunc(result.value as number);
      }
      case 'boolean':
        return orValue(tryBoolean(value), value);
      case 'null':
        return orValue(tryNull(value), value);
      case 'array':
        return this.convertArray(node, value);
      case 'object':
        return this.convertObject(node, value);
      case undefined:
        if (node.properties !== undefined || node.patternProperties !== undefined)
          return this.convertObject(node, value);
        if (node.items !== undefined || node.prefixItems !== undefined) return this.convertArray(node, value);
        return value;
      default:
        return value;
    }
  }

  private convertEnum(node: SchemaObject, values: unknown[], value: unknown): unknown {
    if (values.some((member) => member === value)) return value;
    for (const member of values) {
      const candidate = convertLiteral(member, value);
      if (candidate !== value && this.passes(node, candidate) === true) return candidate;
    }
    return value;
  }

  private convertUnion(node: SchemaObject, branches: unknown[], value: unknown): unknown {
    if (branches.some((branch) => this.passes(branch, value) === true)) return this.convertMembers(node, value);
    for (const branch of branches) {
      const candidate = this.convertMembers(node, this.convert(branch, value));
      if (this.passes(node, candidate) === true) return candidate;
    }
    return this.convertMembers(node, value);
  }

  private convertMembers(node: SchemaObject, value: unknown): unknown {
    const declares =
      node.properties !== undefined || node.patternProperties !== undefined || node.additionalProperties !== undefined;
    return declares ? this.convertObject(node, value) : value;
  }

  private convertArray(node: SchemaObject, value: unknown): unknown {
    const prefix = Array.isArray(node.items)
      ? node.items
      : Array.isArray(node.prefixItems)
        ? node.prefixItems
        : undefined;
    if (prefix !== undefined) {
      if (!Array.isArray(value)) return value; // a tuple never wraps a single value
      const rest = Array.isArray(node.items) ? undefined : node.items;
      return mapItems(value, (item, i) => {
        const schema = i < prefix.length ? prefix[i] : rest;
        return schema === undefined ? item : this.convert(schema, item);
      });
    }
    if (Array.isArray(value))
      return node.items === undefined ? value : mapItems(value, (item) => this.convert(node.items, item));
    const item = node.items;
    return [isPlainObject(item) ? this.reenter(item, value) : value];
  }

  private convertObject(node: SchemaObject, value: unknown): unknown {
    if (!isPlainObject(value)) return value;
    const properties = isPlainObject(node.properties) ? node.properties : {};
    const patterns = patternsOf(node);
    const additional = isPlainObject(node.additionalProperties) ? node.additionalProperties : undefined;
    let out: Record<string, unknown> | undefined;
    for (const key of Object.keys(value)) {
      if (value[key] === undefined) continue;
      let next: unknown = value[key];
      let matched = Object.hasOwn(properties, key);
      if (matched) next = this.convert(properties[key], next);
      for (const [pattern, schema] of patterns) {
        if (!pattern.test(key)) continue;
        matched = true;
        next = this.convert(schema, next);
      }
      if (!matched && additional !== undefined) next = this.convert(additional, next);
      if (next !== value[key]) {
        out ??= { ...value };
        out[key] = next;
      }
    }
    return out ?? value;
  }

  // Pass 3: primitive coercion by type -------------------------------------------------------------------------------

  private coerceTypes(value: unknown, schema: unknown): unknown {
    if (!isPlainObject(schema)) return value;
    let next = value;
    if (Array.isArray(schema.allOf)) for (const member of schema.allOf) next = this.coerceTypes(next, member);
    if (Array.isArray(schema.anyOf)) next = this.coerceUnion(next, schema.anyOf);
    if (Array.isArray(schema.oneOf)) next = this.coerceUnion(next, schema.oneOf);
    const types = typesOf(schema);
    const matchesUnionMember = types.length > 1 && types.some((type) => matchesType(next, type));
    if (types.length > 0 && !matchesUnionMember) {
      for (const type of types) {
        const candidate = coercePrimitive(next, type);
        if (candidate !== next) {
          next = candidate;
          break;
        }
      }
    }
    if (types.includes('object') && isPlainObject(next)) next = this.coerceProperties(next, schema);
    if (types.includes('array') && Array.isArray(next)) next = this.coerceItems(next, schema);
    return next;
  }

  private coerceUnion(value: unknown, branches: unknown[]): unknown {
    for (const branch of branches) if (this.passes(branch, value) === true) return value;
    for (const branch of branches) {
      const coerced = this.coerceTypes(value, branch);
      if (this.passes(branch, coerced) === true) return coerced;
    }
    return value;
  }

  private coerceProperties(value: Record<string, unknown>, schema: SchemaObject): Record<string, unknown> {
    const properties = isPlainObject(schema.properties) ? schema.properties : {};
    const patterns = patternsOf(schema);
    const additional = isPlainObject(schema.additionalProperties) ? schema.additionalProperties : undefined;
    let out: Record<string, unknown> | undefined;
    const set = (key: string, next: unknown) => {
      if (next === (out ?? value)[key]) return;
      out ??= { ...value };
      out[key] = next;
    };
    for (const [key, property] of Object.entries(properties))
      if (key in value) set(key, this.coerceTypes(value[key], property));
    eachExtraMember(value, properties, patterns, additional, (key, schema, fromOut) =>
      set(key, this.coerceTypes(fromOut ? (out ?? value)[key] : value[key], schema)),
    );
    return out ?? value;
  }

  private coerceItems(value: unknown[], schema: SchemaObject): unknown[] {
    return mapItems(value, (item, i) => {
      const itemSchema = itemSchemaAt(schema, i);
      return isPlainObject(itemSchema) ? this.coerceTypes(item, itemSchema) : item;
    });
  }
}

/**
 * Visits each key's `patternProperties` schemas (`fromOut`: read the value as changed so far) and, for a key neither
 * `properties` nor a pattern names, the `additionalProperties` schema (`fromOut` false: the original value), as Pi does.
 */
function eachExtraMember(
  value: Record<string, unknown>,
  properties: Record<string, unknown>,
  patterns: [RegExp, unknown][],
  additional: unknown,
  visit: (key: string, schema: unknown, fromOut: boolean) => void,
): void {
  for (const key of Object.keys(value)) {
    let matched = Object.hasOwn(properties, key);
    for (const [pattern, item] of patterns) {
      if (!pattern.test(key)) continue;
      matched = true;
      visit(key, item, true);
    }
    if (!matched && additional !== undefined) visit(key, additional, false);
  }
}

const regexes = new Map<string, RegExp>();

/** A `pattern` source as an ECMAScript regex with the `u` flag, or without it when `u` rejects the source. */
function regexOf(source: string): RegExp {
  let re = regexes.get(source);
  if (re) return re;
  try {
    re = new RegExp(source, 'u');
  } catch {
    re = new RegExp(source);
  }
  regexes.set(source, re);
  return re;
}

function patternsOf(schema: SchemaObject): [RegExp, unknown][] {
  if (!isPlainObject(schema.patternProperties)) return [];
  const out: [RegExp, unknown][] = [];
  for (const [pattern, item] of Object.entries(schema.patternProperties)) {
    try {
      out.push([regexOf(pattern), item]);
    } catch {
      // an invalid pattern is ajv's to report
    }
  }
  return out;
}

function itemSchemaAt(schema: SchemaObject, index: number): unknown {
  if (Array.isArray(schema.items)) return schema.items[index];
  if (Array.isArray(schema.prefixItems) && index < schema.prefixItems.length) return schema.prefixItems[index];
  return schema.items;
}

function mapItems(items: unknown[], map: (item: unknown, index: number) => unknown): unknown[] {
  let out: unknown[] | undefined;
  for (let i = 0; i < items.length; i++) {
    const next = map(items[i], i);
    if (next === items[i]) continue;
    out ??= items.slice();
    out[i] = next;
  }
  return out ?? items;
}

function orValue(result: Result, value: unknown): unknown {
  return result === undefined ? value : result.value;
}

function convertLiteral(literal: unknown, value: unknown): unknown {
  if (literal === value) return value;
  const result =
    typeof literal === 'string'
      ? tryString(value)
      : typeof literal === 'number'
        ? tryNumber(value)
        : typeof literal === 'boolean'
          ? tryBoolean(value)
          : undefined;
  return result !== undefined && result.value === literal ? result.value : value;
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function tryString(value: unknown): Result {
  if (typeof value === 'boolean' || isFiniteNumber(value)) return { value: String(value) };
  if (value === null) return { value: 'null' };
  if (typeof value === 'string') return { value };
  if (value === undefined) return { value: '' };
  return undefined;
}

/** TypeBox's TryBigInt of a string, as a number: `12n`, `12.5` (truncated) or `12`, within the safe integer range. */
function integerOfString(value: string): number | undefined {
  let digits: string | undefined;
  if (/^-?(0|[1-9]\d*)n$/.test(value)) digits = value.slice(0, -1);
  else if (/^-?(0|[1-9]\d*)\.\d+$/.test(value)) digits = value.split('.')[0];
  else if (/^-?(0|[1-9]\d*)$/.test(value)) digits = value;
  if (digits === undefined) return undefined;
  const big = BigInt(digits);
  return big <= BigInt(Number.MAX_SAFE_INTEGER) && big >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(big) : undefined;
}

function tryNumber(value: unknown): Result {
  if (typeof value === 'boolean') return { value: value ? 1 : 0 };
  if (isFiniteNumber(value)) return { value };
  if (value === null || value === undefined) return { value: 0 };
  if (typeof value !== 'string') return undefined;
  const coerced = +value;
  if (Number.isFinite(coerced)) return { value: coerced };
  const lowercase = value.toLowerCase();
  if (lowercase === 'false') return { value: 0 };
  if (lowercase === 'true') return { value: 1 };
  const integer = integerOfString(value);
  return integer === undefined ? undefined : { value: integer };
}

function tryBoolean(value: unknown): Result {
  if (typeof value === 'boolean') return { value };
  if (isFiniteNumber(value)) return value === 0 ? { value: false } : value === 1 ? { value: true } : undefined;
  if (value === null || value === undefined) return { value: false };
  if (typeof value !== 'string') return undefined;
  const lowercase = value.toLowerCase();
  if (lowercase === 'false' || value === '0') return { value: false };
  if (lowercase === 'true' || value === '1') return { value: true };
  return undefined;
}

function tryNull(value: unknown): Result {
  if (typeof value === 'boolean') return value === false ? { value: null } : undefined;
  if (isFiniteNumber(value)) return value === 0 ? { value: null } : undefined;
  if (value === null || value === undefined) return { value: null };
  if (typeof value !== 'string') return undefined;
  const lowercase = value.toLowerCase();
  return lowercase === 'undefined' || lowercase === 'null' || value === '' || value === '0'
    ? { value: null }
    : undefined;
}

function typesOf(schema: SchemaObject): string[] {
  if (typeof schema.type === 'string') return [schema.type];
  if (Array.isArray(schema.type)) return schema.type.filter((type): type is string => typeof type === 'string');
  return [];
}

function matchesType(value: unknown, type: string): boolean {
  switch (type) {
    case 'number':
      return isFiniteNumber(value);
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

function coercePrimitive(value: unknown, type: string): unknown {
  switch (type) {
    case 'number':
    case 'integer': {
      if (value === null) return 0;
      if (typeof value === 'string' && value.trim() !== '') {
        const parsed = Number(value);
        if (type === 'number' ? Number.isFinite(parsed) : Number.isInteger(parsed)) return parsed;
      }
      if (typeof value === 'boolean') return value ? 1 : 0;
      return value;
    }
    case 'boolean':
      if (value === null) return false;
      if (value === 'true' || value === 1) return true;
      if (value === 'false' || value === 0) return false;
      return value;
    case 'string':
      if (value === null) return '';
      if (typeof value === 'number' || typeof value === 'boolean') return String(value);
      return value;
    case 'null':
      return value === '' || value === 0 || value === false ? null : value;
    default:
      return value;
  }
}
