import { Ajv } from 'ajv';
import type { ErrorObject } from 'ajv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatValidationErrors, validateToolArguments } from '../../activities/tools/validate-arguments.js';
import type { ValidatableTool } from '../../activities/tools/validate-arguments.js';

type Schema = Record<string, unknown>;

function run(parameters: Schema, args: unknown, name = 'echo'): unknown {
  const tool: ValidatableTool = { name, parameters };
  return validateToolArguments(tool, { name, arguments: args });
}

function failure(parameters: Schema, args: unknown, name = 'echo'): string {
  try {
    run(parameters, args, name);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error('expected validation to fail');
}

/** Pi's upstream helper: the schema under test is the required property `value`. */
function wrapped(schema: Schema): Schema {
  return { type: 'object', properties: { value: schema }, required: ['value'] };
}

function coerceValue(schema: Schema, value: unknown): unknown {
  return (run(wrapped(schema), { value }) as { value: unknown }).value;
}

function expected(name: string, lines: string[], args: unknown): string {
  return `Validation failed for tool "${name}":\n${lines.join('\n')}\n\nReceived arguments:\n${JSON.stringify(args, null, 2)}`;
}

const echoSchema = (): Schema => ({ type: 'object', properties: { value: { type: 'string' } }, required: ['value'] });

const editSchema = (): Schema => ({
  type: 'object',
  properties: {
    path: { type: 'string' },
    edits: {
      type: 'array',
      items: {
        type: 'object',
        properties: { oldText: { type: 'string' }, newText: { type: 'string' } },
        required: ['oldText', 'newText'],
      },
    },
  },
  required: ['path', 'edits'],
});

describe('message skeleton', () => {
  it('matches the A.5-2 acceptance text exactly', () => {
    expect(failure(echoSchema(), {})).toBe(
      'Validation failed for tool "echo":\n  - value: must have required properties value\n\nReceived arguments:\n{}',
    );
  });

  it('puts one line per error under the header, then the arguments with 2-space indentation', () => {
    const args = { value: [1], count: 'x' };
    const schema = { type: 'object', properties: { value: { type: 'string' }, count: { type: 'integer' } } };
    expect(failure(schema, args)).toBe(
      'Validation failed for tool "echo":\n  - value: must be string\n  - count: must be integer\n\nReceived arguments:\n{\n  "value": [\n    1\n  ],\n  "count": "x"\n}',
    );
  });

  it('names the tool of the call', () => {
    expect(failure(echoSchema(), {}, 'my_tool')).toMatch(/^Validation failed for tool "my_tool":\n/);
  });

  it('prints the arguments as received, before coercion', () => {
    const schema = { type: 'object', properties: { n: { type: 'number' }, s: { type: 'string' } }, required: ['n', 's'] };
    const args = { n: '42', s: 7, extra: null };
    expect(failure({ ...schema, additionalProperties: false }, args)).toBe(
      expected('echo', ['  - root: must NOT have additional properties'], args),
    );
  });

  it('prints undefined arguments as `undefined`', () => {
    expect(failure(echoSchema(), undefined)).toBe(
      'Validation failed for tool "echo":\n  - root: must be object\n\nReceived arguments:\nundefined',
    );
  });

  it('uses `Unknown validation error` when there are no error entries', () => {
    expect(formatValidationErrors([])).toBe('Unknown validation error');
    expect(formatValidationErrors(null)).toBe('Unknown validation error');
    expect(formatValidationErrors(undefined)).toBe('Unknown validation error');
  });

  it('throws an Error instance', () => {
    expect(() => run(echoSchema(), {})).toThrow(Error);
  });
});

describe('path format', () => {
  it('turns the instance path into a dotted path', () => {
    const args = { path: 'x', edits: [{ oldText: { text: 'a' }, newText: 'b' }] };
    expect(failure(editSchema(), args)).toBe(expected('echo', ['  - edits.0.oldText: must be string'], args));
  });

  it('uses `root` for the empty path', () => {
    expect(failure(echoSchema(), [])).toBe(expected('echo', ['  - root: must be object'], []));
  });

  it('puts a required error at parent path + first missing property', () => {
    const args = { path: 'x', edits: [{ oldText: 'a' }] };
    expect(failure(editSchema(), args)).toBe(expected('echo', ['  - edits.0.newText: must have required properties newText'], args));
  });

  it('uses just the property name for a required error at the top level', () => {
    expect(failure(editSchema(), { edits: [] })).toBe(expected('echo', ['  - path: must have required properties path'], { edits: [] }));
  });

  it('unescapes JSON-pointer segments of keys containing "/" or "~"', () => {
    const schema = { type: 'object', properties: { 'a/b': { type: 'object', properties: { 'c~d': { type: 'number' } } } } };
    const args = { 'a/b': { 'c~d': 'x' } };
    expect(failure(schema, args)).toBe(expected('echo', ['  - a/b.c~d: must be number'], args));
  });
});

describe('required aggregation', () => {
  it('merges all missing properties of one object into one line', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } }, required: ['a', 'b'] };
    expect(failure(schema, {})).toBe(expected('echo', ['  - a: must have required properties a, b'], {}));
  });

  it('merges nested missing properties at the first missing one', () => {
    const args = { path: 'x', edits: [{}] };
    expect(failure(editSchema(), args)).toBe(
      expected('echo', ['  - edits.0.oldText: must have required properties oldText, newText'], args),
    );
  });

  it('keeps separate lines for separate objects, in ajv order', () => {
    const args = { edits: [{ oldText: 'a' }, { newText: 'b' }] };
    expect(failure(editSchema(), args)).toBe(
      expected(
        'echo',
        [
          '  - path: must have required properties path',
          '  - edits.0.newText: must have required properties newText',
          '  - edits.1.oldText: must have required properties oldText',
        ],
        args,
      ),
    );
  });

  it('formats raw ajv required errors the same way (formatValidationErrors)', () => {
    const errors: ErrorObject[] = [
      { instancePath: '/x', schemaPath: '#/properties/x/required', keyword: 'required', params: { missingProperty: 'p' }, message: "must have required property 'p'" },
      { instancePath: '/x', schemaPath: '#/properties/x/required', keyword: 'required', params: { missingProperty: 'q' }, message: "must have required property 'q'" },
      { instancePath: '/y', schemaPath: '#/properties/y/type', keyword: 'type', params: { type: 'number' }, message: 'must be number' },
    ];
    expect(formatValidationErrors(errors)).toBe('  - x.p: must have required properties p, q\n  - y: must be number');
  });
});

describe('ajv messages and de-duplication', () => {
  it("keeps ajv's text for type, additionalProperties, minLength, const, enum and anyOf errors", () => {
    const schema = {
      type: 'object',
      properties: {
        n: { type: 'number' },
        i: { type: 'integer' },
        b: { type: 'boolean' },
        o: { type: 'object' },
        arr: { type: 'array' },
        s: { type: 'string', minLength: 3 },
        c: { const: 'x' },
        e: { enum: ['a', 'b'] },
        u: { anyOf: [{ type: 'number' }, { type: 'null' }] },
      },
    };
    const args = { n: 'abc', i: 1.5, b: 'yes', o: 'nope', arr: 'nope', s: 'ab', c: 'y', e: 'z', u: 'q' };
    expect(failure(schema, args)).toBe(
      expected(
        'echo',
        [
          '  - n: must be number',
          '  - i: must be integer',
          '  - b: must be boolean',
          '  - o: must be object',
          '  - arr: must be array',
          '  - s: must NOT have fewer than 3 characters',
          '  - c: must be equal to constant',
          '  - e: must be equal to one of the allowed values',
          '  - u: must be number',
          '  - u: must be null',
          '  - u: must match a schema in anyOf',
        ],
        args,
      ),
    );
  });

  it('prints identical lines once (two extra properties → one additionalProperties line)', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false };
    const args = { a: 'x', b: 1, c: 2 };
    expect(failure(schema, args)).toBe(expected('echo', ['  - root: must NOT have additional properties'], args));
  });
});

describe('coercion: number', () => {
  it('coerces "42" → 42, true → 1, false → 0, null → 0, " 42 " → 42, "1e3" → 1000', () => {
    expect(coerceValue({ type: 'number' }, '42')).toBe(42);
    expect(coerceValue({ type: 'number' }, true)).toBe(1);
    expect(coerceValue({ type: 'number' }, false)).toBe(0);
    expect(coerceValue({ type: 'number' }, null)).toBe(0);
    expect(coerceValue({ type: 'number' }, ' 42 ')).toBe(42);
    expect(coerceValue({ type: 'number' }, '1e3')).toBe(1000);
  });

  it('leaves blank and non-numeric strings alone (they fail)', () => {
    expect(failure(wrapped({ type: 'number' }), { value: '' })).toBe(expected('echo', ['  - value: must be number'], { value: '' }));
    expect(failure(wrapped({ type: 'number' }), { value: 'abc' })).toBe(expected('echo', ['  - value: must be number'], { value: 'abc' }));
  });
});

describe('coercion: integer', () => {
  it('coerces "42" → 42, true → 1, null → 0', () => {
    expect(coerceValue({ type: 'integer' }, '42')).toBe(42);
    expect(coerceValue({ type: 'integer' }, true)).toBe(1);
    expect(coerceValue({ type: 'integer' }, null)).toBe(0);
  });

  it('fails for "42.1" and 42.1', () => {
    expect(failure(wrapped({ type: 'integer' }), { value: '42.1' })).toBe(expected('echo', ['  - value: must be integer'], { value: '42.1' }));
    expect(failure(wrapped({ type: 'integer' }), { value: 42.1 })).toBe(expected('echo', ['  - value: must be integer'], { value: 42.1 }));
  });
});

describe('coercion: boolean', () => {
  it('coerces "true"/"false"/1/0 and null → false', () => {
    expect(coerceValue({ type: 'boolean' }, 'true')).toBe(true);
    expect(coerceValue({ type: 'boolean' }, 'false')).toBe(false);
    expect(coerceValue({ type: 'boolean' }, 1)).toBe(true);
    expect(coerceValue({ type: 'boolean' }, 0)).toBe(false);
    expect(coerceValue({ type: 'boolean' }, null)).toBe(false);
  });

  it('fails for "1", "0", "TRUE" and 2', () => {
    for (const value of ['1', '0', 'TRUE', 2]) {
      expect(failure(wrapped({ type: 'boolean' }), { value })).toBe(expected('echo', ['  - value: must be boolean'], { value }));
    }
  });
});

describe('coercion: string', () => {
  it('coerces null → "", true → "true", 42 → "42"', () => {
    expect(coerceValue({ type: 'string' }, null)).toBe('');
    expect(coerceValue({ type: 'string' }, true)).toBe('true');
    expect(coerceValue({ type: 'string' }, 42)).toBe('42');
  });

  it('does not stringify objects or arrays', () => {
    expect(failure(wrapped({ type: 'string' }), { value: { a: 1 } })).toBe(expected('echo', ['  - value: must be string'], { value: { a: 1 } }));
    expect(failure(wrapped({ type: 'string' }), { value: [1] })).toBe(expected('echo', ['  - value: must be string'], { value: [1] }));
  });
});

describe('coercion: null', () => {
  it('coerces "" / 0 / false → null', () => {
    expect(coerceValue({ type: 'null' }, '')).toBeNull();
    expect(coerceValue({ type: 'null' }, 0)).toBeNull();
    expect(coerceValue({ type: 'null' }, false)).toBeNull();
  });

  it('fails for the string "null"', () => {
    expect(failure(wrapped({ type: 'null' }), { value: 'null' })).toBe(expected('echo', ['  - value: must be null'], { value: 'null' }));
  });
});

describe('coercion: type lists', () => {
  it('keeps a value that already matches one listed type (["number","string"] with "1" stays "1")', () => {
    expect(coerceValue({ type: ['number', 'string'] }, '1')).toBe('1');
  });

  it('takes the first listed type whose coercion changes the value (["boolean","number"] with "1" → 1)', () => {
    expect(coerceValue({ type: ['boolean', 'number'] }, '1')).toBe(1);
    expect(coerceValue({ type: ['boolean', 'number'] }, 'true')).toBe(true);
  });

  it('accepts null for type ["array","null"] with items', () => {
    expect(coerceValue({ type: ['array', 'null'], items: { type: 'string' } }, null)).toBeNull();
  });

  it('reports ajv\'s list message when nothing coerces', () => {
    expect(failure(wrapped({ type: ['number', 'boolean'] }), { value: 'x' })).toBe(
      expected('echo', ['  - value: must be number,boolean'], { value: 'x' }),
    );
  });
});

describe('coercion: unions (anyOf / oneOf)', () => {
  it('keeps a valid null in nullable unions', () => {
    expect(coerceValue({ anyOf: [{ type: 'number' }, { type: 'null' }] }, null)).toBeNull();
    expect(coerceValue({ oneOf: [{ type: 'number' }, { type: 'null' }] }, null)).toBeNull();
  });

  it('coerces into the first member a coerced copy validates (anyOf[number,null] with "42" → 42)', () => {
    expect(coerceValue({ anyOf: [{ type: 'number' }, { type: 'null' }] }, '42')).toBe(42);
  });

  it('keeps a value that validates some member unchanged', () => {
    expect(coerceValue({ anyOf: [{ type: 'number' }, { type: 'string' }] }, '42')).toBe('42');
  });

  it('leaves the value alone when no member accepts a coerced copy', () => {
    const args = { value: { a: 1 } };
    expect(failure(wrapped({ anyOf: [{ type: 'number' }, { type: 'null' }] }), args)).toBe(
      expected('echo', ['  - value: must be number', '  - value: must be null', '  - value: must match a schema in anyOf'], args),
    );
  });

  it('coerces nested properties only through a member that then validates', () => {
    const schema = {
      anyOf: [
        { type: 'object', properties: { kind: { const: 'a' }, n: { type: 'number' } }, required: ['kind'] },
        { type: 'object', properties: { kind: { const: 'b' }, flag: { type: 'boolean' } }, required: ['kind'] },
      ],
    };
    expect(coerceValue(schema, { kind: 'b', flag: 'true' })).toEqual({ kind: 'b', flag: true });
  });
});

describe('coercion: allOf, additionalProperties and items', () => {
  it('applies every allOf member', () => {
    const schema = { allOf: [{ type: 'object', properties: { a: { type: 'number' } } }, { type: 'object', properties: { b: { type: 'boolean' } } }] };
    expect(coerceValue(schema, { a: '1', b: 'false' })).toEqual({ a: 1, b: false });
  });

  it('coerces undeclared keys through an additionalProperties schema', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'integer' } };
    expect(coerceValue(schema, { a: 1, x: '2', y: '3' })).toEqual({ a: '1', x: 2, y: 3 });
  });

  it('coerces array items (single schema and positional tuple)', () => {
    expect(coerceValue({ type: 'array', items: { type: 'number' } }, ['1', true, null])).toEqual([1, 1, 0]);
    expect(coerceValue({ type: 'array', items: [{ type: 'number' }, { type: 'boolean' }] }, ['1', 'true', 'x'])).toEqual([1, true, 'x']);
  });

  it('only touches declared properties that are present, and keeps extra properties', () => {
    const schema = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'string' } } };
    expect(run(schema, { a: '5', extra: '7' })).toEqual({ a: 5, extra: '7' });
  });

  it('follows local $ref definitions', () => {
    const schema = {
      type: 'object',
      $defs: { Node: { type: 'object', properties: { v: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#/$defs/Node' } } } } },
      properties: { root: { $ref: '#/$defs/Node' } },
    };
    expect(run(schema, { root: { v: '1', kids: [{ v: '2', kids: [{ v: '3' }] }] } })).toEqual({
      root: { v: 1, kids: [{ v: 2, kids: [{ v: 3 }] }] },
    });
  });
});

describe('coercion: JSON-string repair', () => {
  const inlineObject = (): Schema => ({
    type: 'object',
    properties: { inline: { type: 'string' }, version: { type: 'integer' } },
    required: ['inline'],
    additionalProperties: false,
  });

  it('parses a JSON object string for an object-typed property and coerces inside it', () => {
    expect(coerceValue(inlineObject(), '{"inline":"echo hi","version":"2"}')).toEqual({ inline: 'echo hi', version: 2 });
  });

  it('parses a JSON array string for an array-typed property (integer items)', () => {
    expect(coerceValue({ type: 'array', items: { type: 'integer' } }, '["1", 2]')).toEqual([1, 2]);
  });

  it('tolerates surrounding whitespace', () => {
    expect(coerceValue({ type: 'array', items: { type: 'integer' } }, '  [1, 2]\n')).toEqual([1, 2]);
  });

  it('rejects non-JSON text for an object with `must be object`', () => {
    const args = { value: '\n<parameter name="inline">cd /repo\necho hi' };
    const schema = wrapped({ type: 'object', properties: { inline: { type: 'string' } }, additionalProperties: false });
    expect(failure(schema, args)).toBe(expected('echo', ['  - value: must be object'], args));
  });

  it('rejects JSON that does not validate the object schema', () => {
    const args = { value: '{"weird":true}' };
    expect(failure(wrapped(inlineObject()), args)).toBe(expected('echo', ['  - value: must be object'], args));
  });

  it('does not parse JSON of the wrong kind (array text for an object)', () => {
    const args = { value: '[1]' };
    expect(failure(wrapped({ type: 'object' }), args)).toBe(expected('echo', ['  - value: must be object'], args));
  });

  it('does not parse when the type also allows string', () => {
    expect(coerceValue({ type: ['object', 'string'] }, '{"a":1}')).toBe('{"a":1}');
  });

  it('repairs top-level arguments given as a JSON object string', () => {
    expect(run({ type: 'object', properties: { n: { type: 'number' } } }, '{"n":"3"}')).toEqual({ n: 3 });
  });
});

describe('coercion: union of an object member and a string member', () => {
  const unionSchema = (): Schema => ({
    anyOf: [
      { type: 'object', properties: { inline: { type: 'string' } }, required: ['inline'], additionalProperties: false },
      { type: 'string' },
    ],
  });

  it('prefers the object when the JSON text validates it', () => {
    expect(coerceValue(unionSchema(), '{"inline":"echo hi"}')).toEqual({ inline: 'echo hi' });
  });

  it('keeps plain text as the string member', () => {
    expect(coerceValue(unionSchema(), 'just a plain command')).toBe('just a plain command');
  });

  it('keeps non-matching JSON as the string member', () => {
    expect(coerceValue(unionSchema(), '{"weird":true}')).toBe('{"weird":true}');
  });

  it('repairs through a $ref member', () => {
    const schema = {
      type: 'object',
      $defs: { Script: { type: 'object', properties: { inline: { type: 'string' } }, required: ['inline'], additionalProperties: false } },
      properties: { script: { anyOf: [{ $ref: '#/$defs/Script' }, { type: 'string' }] } },
    };
    expect(run(schema, { script: '{"inline":"x"}' })).toEqual({ script: { inline: 'x' } });
    expect(run(schema, { script: 'plain' })).toEqual({ script: 'plain' });
  });
});

describe('quirk 9a: non-object top-level arguments', () => {
  it('returns the coerced value when it validates', () => {
    expect(run({ type: 'number' }, '42')).toBe(42);
  });

  it('returns the uncoerced value without throwing when the coerced value does not validate', () => {
    expect(run({ type: 'integer', minimum: 100 }, '42')).toBe('42');
  });

  it('throws as usual when the walk does not change the value', () => {
    expect(failure({ type: 'object' }, 'hello')).toBe(expected('echo', ['  - root: must be object'], 'hello'));
    expect(failure({ type: 'object' }, null)).toBe(expected('echo', ['  - root: must be object'], null));
  });
});

describe('immutability', () => {
  it('never mutates the call arguments and returns a copy', () => {
    const args = { value: { inline: 'x', version: '2' }, list: ['1', '2'], json: '{"a":"1"}' };
    const snapshot = structuredClone(args);
    const schema = {
      type: 'object',
      properties: {
        value: { type: 'object', properties: { inline: { type: 'string' }, version: { type: 'integer' } } },
        list: { type: 'array', items: { type: 'number' } },
        json: { type: 'object', properties: { a: { type: 'number' } } },
      },
    };
    const result = run(schema, args);
    expect(result).toEqual({ value: { inline: 'x', version: 2 }, list: [1, 2], json: { a: 1 } });
    expect(args).toEqual(snapshot);
    expect(result).not.toBe(args);
  });

  it('returns a copy even when nothing was coerced', () => {
    const args = { value: 'x' };
    const result = run(echoSchema(), args);
    expect(result).toEqual(args);
    expect(result).not.toBe(args);
  });
});

describe('schema compilation', () => {
  afterEach(() => vi.restoreAllMocks());

  it('compiles a schema object once across calls', () => {
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    const tool: ValidatableTool = { name: 'once', parameters: { type: 'object', properties: { n: { type: 'number' }, unique1: {} } } };
    for (let i = 0; i < 5; i++) expect(validateToolArguments(tool, { name: 'once', arguments: { n: String(i) } })).toEqual({ n: i });
    expect(() => validateToolArguments(tool, { name: 'once', arguments: { n: 'x' } })).toThrow('Validation failed');
    expect(compile).toHaveBeenCalledTimes(1);
  });

  it('reuses the compiled validator for a fresh object with the same content (deserialized schemas)', () => {
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    const json = JSON.stringify({ type: 'object', properties: { n: { type: 'number' }, unique2: {} } });
    for (let i = 0; i < 3; i++) {
      const tool: ValidatableTool = { name: 'fresh', parameters: JSON.parse(json) as Schema };
      expect(validateToolArguments(tool, { name: 'fresh', arguments: { n: '1' } })).toEqual({ n: 1 });
    }
    expect(compile).toHaveBeenCalledTimes(1);
  });

  it('compiles union members once as well', () => {
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    const tool: ValidatableTool = {
      name: 'union',
      parameters: { type: 'object', properties: { v: { anyOf: [{ type: 'number' }, { type: 'null' }] }, unique3: {} } },
    };
    for (let i = 0; i < 3; i++) expect(validateToolArguments(tool, { name: 'union', arguments: { v: '7' } })).toEqual({ v: 7 });
    expect(compile).toHaveBeenCalledTimes(3); // root + the two members
  });

  it('throws a clear error for a schema ajv cannot compile, every time, without recompiling', () => {
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    const tool: ValidatableTool = { name: 'broken', parameters: { type: 'object', properties: { a: { type: 'strang' } } } };
    const message =
      'Invalid parameters schema for tool "broken": schema is invalid: data/properties/a/type must be equal to one of the allowed values, data/properties/a/type must be array, data/properties/a/type must match a schema in anyOf';
    expect(() => validateToolArguments(tool, { name: 'broken', arguments: {} })).toThrow(message);
    expect(() => validateToolArguments(tool, { name: 'broken', arguments: {} })).toThrow(message);
    expect(compile).toHaveBeenCalledTimes(1);
  });

  it('reports an unresolvable $ref as an invalid schema', () => {
    const tool: ValidatableTool = { name: 'dangling', parameters: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } } };
    expect(() => validateToolArguments(tool, { name: 'dangling', arguments: {} })).toThrow(
      'Invalid parameters schema for tool "dangling": can\'t resolve reference #/$defs/missing from id #',
    );
  });

  it('validates draft 2020-12 schemas (prefixItems) and ignores unknown dialects', () => {
    const schema2020 = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { t: { type: 'array', prefixItems: [{ type: 'integer' }], items: { type: 'boolean' } } },
      required: ['t'],
    };
    expect(run(schema2020, { t: ['1', 'true', 'false'] })).toEqual({ t: [1, true, false] });
    expect(failure(schema2020, { t: [1, 'x'] })).toBe(expected('echo', ['  - t.1: must be boolean'], { t: [1, 'x'] }));
    const draft04 = { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object', properties: { n: { type: 'number' } } };
    expect(run(draft04, { n: '4' })).toEqual({ n: 4 });
  });

  it('ignores unknown keywords and formats (strict: false, no format validation)', () => {
    const schema = { type: 'object', properties: { url: { type: 'string', format: 'uri', 'x-vendor': true } } };
    expect(run(schema, { url: 'not a uri' })).toEqual({ url: 'not a uri' });
  });
});
