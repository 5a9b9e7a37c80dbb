import { Ajv } from 'ajv';
import type { ErrorObject } from 'ajv';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { formatValidationErrors, validateToolArguments } from '../../activities/tools/validate-arguments.js';
import type { ValidatableTool } from '../../activities/tools/validate-arguments.js';
import { validateToolArguments as piValidate } from '@earendil-works/pi-ai';

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
    const schema = {
      type: 'object',
      properties: { n: { type: 'number' }, s: { type: 'string' } },
      required: ['n', 's'],
    };
    const args = { n: '42', s: 7, extra: null };
    expect(failure({ ...schema, additionalProperties: false }, args)).toBe(
      expected('echo', ['  - root: must NOT have additional properties'], args),
    );
  });

  it('prints undefined arguments as `undefined`', () => {
    expect(failure(echoSchema(), undefined)).toBe(
      'Validation failed for tool "echo":\n  - root: expected object, got undefined\n\nReceived arguments:\nundefined',
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
    expect(failure(echoSchema(), [])).toBe(expected('echo', ['  - root: expected object, got array'], []));
  });

  it('puts a required error at parent path + first missing property', () => {
    const args = { path: 'x', edits: [{ oldText: 'a' }] };
    expect(failure(editSchema(), args)).toBe(
      expected('echo', ['  - edits.0.newText: must have required properties newText'], args),
    );
  });

  it('uses just the property name for a required error at the top level', () => {
    expect(failure(editSchema(), { edits: [] })).toBe(
      expected('echo', ['  - path: must have required properties path'], { edits: [] }),
    );
  });

  it('unescapes JSON-pointer segments of keys containing "/" or "~"', () => {
    const schema = {
      type: 'object',
      properties: { 'a/b': { type: 'object', properties: { 'c~d': { type: 'number' } } } },
    };
    const args = { 'a/b': { 'c~d': 'x' } };
    expect(failure(schema, args)).toBe(expected('echo', ['  - a/b.c~d: must be number'], args));
  });
});

describe('required aggregation', () => {
  it('merges all missing properties of one object into one line', () => {
    const schema = {
      type: 'object',
      properties: { a: { type: 'string' }, b: { type: 'string' } },
      required: ['a', 'b'],
    };
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
      {
        instancePath: '/x',
        schemaPath: '#/properties/x/required',
        keyword: 'required',
        params: { missingProperty: 'p' },
        message: "must have required property 'p'",
      },
      {
        instancePath: '/x',
        schemaPath: '#/properties/x/required',
        keyword: 'required',
        params: { missingProperty: 'q' },
        message: "must have required property 'q'",
      },
      {
        instancePath: '/y',
        schemaPath: '#/properties/y/type',
        keyword: 'type',
        params: { type: 'number' },
        message: 'must be number',
      },
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
        arr: { type: 'array', items: { type: 'number' } },
        s: { type: 'string', minLength: 3 },
        c: { const: 'x' },
        e: { enum: ['a', 'b'] },
        u: { anyOf: [{ type: 'number' }, { type: 'null' }] },
      },
    };
    const args = { n: 'abc', i: 'x', b: 'yes', o: 'nope', arr: 'nope', s: 'ab', c: 'y', e: 'z', u: 'q' };
    expect(failure(schema, args)).toBe(
      expected(
        'echo',
        [
          '  - n: must be number',
          '  - i: must be integer',
          '  - b: must be boolean',
          '  - o: must be object',
          '  - arr.0: must be number', // a single value becomes a one-item array (Pi 1.6.0)
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

/**
 * The coercion rules are pi-ai 1.6.0's (pi-schema's three passes). Each case runs through Keel's validator and through
 * pi-ai's own `validateToolArguments`: the same value comes back when Pi accepts it, and both refuse when Pi refuses.
 */
const CASES: [string, Schema, unknown][] = [
  ['number from strings, booleans, null', { type: 'number' }, '42'],
  ['number from true', { type: 'number' }, true],
  ['number from null', { type: 'number' }, null],
  ['number from padded string', { type: 'number' }, ' 42 '],
  ['number from exponent', { type: 'number' }, '1e3'],
  ['number from "true"', { type: 'number' }, 'true'],
  ['number from blank', { type: 'number' }, ''],
  ['number from text', { type: 'number' }, 'abc'],
  ['integer from "42"', { type: 'integer' }, '42'],
  ['integer truncates "3.5"', { type: 'integer' }, '3.5'],
  ['integer truncates 42.1', { type: 'integer' }, 42.1],
  ['integer from null', { type: 'integer' }, null],
  ['boolean from "true"', { type: 'boolean' }, 'true'],
  ['boolean from "1"', { type: 'boolean' }, '1'],
  ['boolean from "TRUE"', { type: 'boolean' }, 'TRUE'],
  ['boolean from 0', { type: 'boolean' }, 0],
  ['boolean from 2', { type: 'boolean' }, 2],
  ['boolean from null', { type: 'boolean' }, null],
  ['string from null is "null"', { type: 'string' }, null],
  ['string from 42', { type: 'string' }, 42],
  ['string from an object', { type: 'string' }, { a: 1 }],
  ['string from an array', { type: 'string' }, [1]],
  ['null from ""', { type: 'null' }, ''],
  ['null from "null"', { type: 'null' }, 'null'],
  ['null from 1', { type: 'null' }, 1],
  ['type list keeps a match', { type: ['number', 'string'] }, '1'],
  ['type list takes the first change', { type: ['boolean', 'number'] }, '1'],
  ['type list with null', { type: ['array', 'null'], items: { type: 'string' } }, null],
  ['type list nothing coerces', { type: ['number', 'boolean'] }, 'x'],
  ['anyOf keeps null', { anyOf: [{ type: 'number' }, { type: 'null' }] }, null],
  ['anyOf coerces into a member', { anyOf: [{ type: 'number' }, { type: 'null' }] }, '42'],
  ['anyOf keeps a valid member', { anyOf: [{ type: 'number' }, { type: 'string' }] }, '42'],
  ['anyOf nothing fits', { anyOf: [{ type: 'number' }, { type: 'null' }] }, { a: 1 }],
  ['oneOf coerces', { oneOf: [{ type: 'integer' }, { type: 'boolean' }] }, 'true'],
  [
    'discriminated union',
    {
      anyOf: [
        { type: 'object', properties: { kind: { const: 'a' }, n: { type: 'number' } }, required: ['kind'] },
        { type: 'object', properties: { kind: { const: 'b' }, flag: { type: 'boolean' } }, required: ['kind'] },
      ],
    },
    { kind: 'b', flag: 'true' },
  ],
  [
    'allOf',
    {
      allOf: [
        { type: 'object', properties: { a: { type: 'number' } } },
        { type: 'object', properties: { b: { type: 'boolean' } } },
      ],
    },
    { a: '1', b: 'false' },
  ],
  [
    'additionalProperties',
    { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: { type: 'integer' } },
    { a: 1, x: '2', y: '3' },
  ],
  ['patternProperties', { type: 'object', patternProperties: { '^n_': { type: 'number' } } }, { n_a: '1', other: '2' }],
  ['items', { type: 'array', items: { type: 'number' } }, ['1', true, null]],
  ['tuple items', { type: 'array', items: [{ type: 'number' }, { type: 'boolean' }] }, ['1', 'true', 'x']],
  ['a single value becomes a one-item array', { type: 'array', items: { type: 'number' } }, '5'],
  ['a tuple never wraps', { type: 'array', items: [{ type: 'number' }] }, '5'],
  ['const from a number', { const: '1' }, 1],
  ['enum from a number', { enum: ['1', '2'] }, 2],
  ['enum no match', { enum: ['a', 'b'] }, 'z'],
  [
    'no JSON-string repair of an object',
    { type: 'object', properties: { inline: { type: 'string' } } },
    '{"inline":"x"}',
  ],
  ['no JSON-string repair of an array', { type: 'array', items: { type: 'integer' } }, '[1, 2]'],
  [
    'object or string keeps the JSON text',
    {
      anyOf: [{ type: 'object', properties: { inline: { type: 'string' } }, required: ['inline'] }, { type: 'string' }],
    },
    '{"inline":"x"}',
  ],
  [
    'optional null dropped',
    { type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } }, required: ['a'] },
    { a: 'x', b: null },
  ],
  ['required null converted', { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { a: null }],
  ['optional nullable null kept', { type: 'object', properties: { b: { type: ['number', 'null'] } } }, { b: null }],
  [
    'nested optional null dropped',
    { type: 'object', properties: { o: { type: 'object', properties: { z: { type: 'boolean' } } } } },
    { o: { z: null } },
  ],
  [
    'local $ref definitions',
    {
      type: 'object',
      $defs: {
        Node: {
          type: 'object',
          properties: { v: { type: 'integer' }, kids: { type: 'array', items: { $ref: '#/$defs/Node' } } },
        },
      },
      properties: { root: { $ref: '#/$defs/Node' } },
    },
    { root: { v: '1', kids: [{ v: '2', kids: [{ v: '3' }] }] } },
  ],
  [
    '$ref optional null is not dropped',
    { type: 'object', $defs: { N: { type: 'number' } }, properties: { n: { $ref: '#/$defs/N' } } },
    { n: null },
  ],
];

describe('coercion: the rules of pi-ai 1.6.0 (differential against its validateToolArguments)', () => {
  for (const [title, schema, value] of CASES) {
    it(title, () => {
      // a schema with its own definitions is the whole parameters schema (its `#/$defs` refs are rooted there)
      const whole = '$defs' in schema;
      const parameters = whole ? schema : wrapped(schema);
      const args = whole ? value : { value };
      let pi: { ok: true; value: unknown } | { ok: false };
      try {
        pi = {
          ok: true,
          value: piValidate({ name: 'echo', description: '', parameters } as never, {
            type: 'toolCall',
            id: 'c',
            name: 'echo',
            arguments: args as never,
          }),
        };
      } catch {
        pi = { ok: false };
      }
      if (pi.ok) expect(run(parameters, args)).toEqual(pi.value);
      else expect(() => run(parameters, args)).toThrow(/^Validation failed for tool "echo":\n/);
    });
  }

  it("a JSON string is not parsed: ajv's message for the object", () => {
    const args = { value: '{"inline":"x"}' };
    expect(failure(wrapped({ type: 'object', properties: { inline: { type: 'string' } } }), args)).toBe(
      expected('echo', ['  - value: must be object'], args),
    );
  });

  it('top-level arguments that are not an object fail (no quirk: the coerced value must validate)', () => {
    expect(failure({ type: 'object' }, 'hello')).toBe(
      expected('echo', ['  - root: expected object, got string'], 'hello'),
    );
    expect(failure({ type: 'integer', minimum: 100 }, '42')).toBe(expected('echo', ['  - root: must be >= 100'], '42'));
  });

  it('an optional null is dropped from the returned arguments', () => {
    expect(
      run(
        { type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } }, required: ['a'] },
        { a: 'x', b: null },
      ),
    ).toEqual({ a: 'x' });
  });
});

describe('argumentsError', () => {
  it("refuses the call with Pi's text before looking at the schema", () => {
    const argumentsError = 'Unterminated string in JSON at position 12\n\nReceived arguments:\n{"command":"ec';
    const call = { name: 'echo', arguments: { command: 'ec' }, argumentsError };
    expect(() => validateToolArguments({ name: 'echo', parameters: echoSchema() }, call)).toThrow(
      new Error(`Invalid arguments for tool "echo": ${argumentsError}`),
    );
  });
});

describe('immutability', () => {
  it('never modifies the call arguments', () => {
    const args = { value: { inline: 'x', version: '2' }, list: ['1', '2'], gone: null };
    const snapshot = structuredClone(args);
    const schema = {
      type: 'object',
      properties: {
        value: { type: 'object', properties: { inline: { type: 'string' }, version: { type: 'integer' } } },
        list: { type: 'array', items: { type: 'number' } },
        gone: { type: 'string' },
      },
    };
    expect(run(schema, args)).toEqual({ value: { inline: 'x', version: 2 }, list: [1, 2] });
    expect(args).toEqual(snapshot);
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
    const tool: ValidatableTool = {
      name: 'once',
      parameters: { type: 'object', properties: { n: { type: 'number' }, unique1: {} } },
    };
    for (let i = 0; i < 5; i++)
      expect(validateToolArguments(tool, { name: 'once', arguments: { n: String(i) } })).toEqual({ n: i });
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
    for (let i = 0; i < 3; i++)
      expect(validateToolArguments(tool, { name: 'union', arguments: { v: '7' } })).toEqual({ v: 7 });
    expect(compile).toHaveBeenCalledTimes(4); // root, the union and its two members
  });

  it('throws a clear error for a schema ajv cannot compile, every time, without recompiling', () => {
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    const tool: ValidatableTool = {
      name: 'broken',
      parameters: { type: 'object', properties: { a: { type: 'strang' } } },
    };
    const message =
      'Invalid parameters schema for tool "broken": schema is invalid: data/properties/a/type must be equal to one of the allowed values, data/properties/a/type must be array, data/properties/a/type must match a schema in anyOf';
    expect(() => validateToolArguments(tool, { name: 'broken', arguments: {} })).toThrow(message);
    expect(() => validateToolArguments(tool, { name: 'broken', arguments: {} })).toThrow(message);
    expect(compile).toHaveBeenCalledTimes(1);
  });

  it('reports an unresolvable $ref as an invalid schema', () => {
    const tool: ValidatableTool = {
      name: 'dangling',
      parameters: { type: 'object', properties: { a: { $ref: '#/$defs/missing' } } },
    };
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
    const draft04 = {
      $schema: 'http://json-schema.org/draft-04/schema#',
      type: 'object',
      properties: { n: { type: 'number' } },
    };
    expect(run(draft04, { n: '4' })).toEqual({ n: 4 });
  });

  it('ignores unknown keywords and formats (strict: false, no format validation)', () => {
    const schema = { type: 'object', properties: { url: { type: 'string', format: 'uri', 'x-vendor': true } } };
    expect(run(schema, { url: 'not a uri' })).toEqual({ url: 'not a uri' });
  });
});

describe("arguments of the wrong type as a whole: Pi's text, word for word (issue 20 item 3)", () => {
  it.each([
    ['a JSON string', '{"value":"hi"}'],
    ['any string', 'not json'],
    ['an integer', 5],
    ['a number', 2.5],
    ['null', null],
    ['an array', ['hi']],
    ['a boolean', true],
    ['undefined', undefined],
  ])('%s', (_what, args) => {
    const tool = { name: 'echo', description: '', parameters: echoSchema() };
    const call = { type: 'toolCall' as const, id: 'c1', name: 'echo', arguments: args as never };
    let pi = '';
    try {
      piValidate(tool as never, call);
    } catch (error) {
      pi = (error as Error).message;
    }
    expect(pi).toMatch(/^Validation failed for tool "echo":\n {2}- root: expected object, got /);
    expect(failure(echoSchema(), args)).toBe(pi);
  });

  it('a JSON string: `root: expected object, got string`, the string as received', () => {
    expect(failure(echoSchema(), '{"value":"hi"}')).toBe(
      'Validation failed for tool "echo":\n  - root: expected object, got string\n\nReceived arguments:\n"{\\"value\\":\\"hi\\"}"',
    );
  });
});
