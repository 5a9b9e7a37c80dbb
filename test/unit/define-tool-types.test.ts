/**
 * `defineTool` types `execute`'s arguments from `parameters` (activities/tools/define-tool.ts `ToolArguments`). The
 * assertions are type-level: `npx tsc --noEmit -p .` fails when the inference is lost; vitest runs the same file.
 * Also its run-time check of `approval` (README "Approvals"): anything but 'never', 'always' or a function throws.
 */
import { Type } from 'typebox';
import { describe, expect, expectTypeOf, it } from 'vitest';
import { defineTool, type JsonSchema, type ToolArguments, type ToolDefinition } from '../../index.js';
import { createReadTool, type ReadArgs, type ReadToolDetails } from '../../activities/tools/builtin/read.js';

const result = { content: [{ type: 'text' as const, text: 'ok' }] };

describe('defineTool argument types', () => {
  it('infers the arguments of a TypeBox schema', () => {
    const tool = defineTool({
      name: 'typed',
      description: 'A TypeBox schema.',
      parameters: Type.Object({ path: Type.String(), limit: Type.Optional(Type.Number()) }),
      execute: async (_id, args) => {
        expectTypeOf(args).toEqualTypeOf<{ path: string; limit?: number }>();
        return result;
      },
      summary: (args) => `typed ${args.path}`,
    });
    expectTypeOf(tool).toEqualTypeOf<ToolDefinition<{ path: string; limit?: number }, unknown>>();
    expect(tool.parameters).toEqual({
      type: 'object',
      required: ['path'],
      properties: { path: { type: 'string' }, limit: { type: 'number' } },
    });
  });

  it('infers the arguments of a JSON Schema literal', () => {
    defineTool({
      name: 'literal',
      description: 'A JSON Schema written inline.',
      parameters: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] },
      execute: async (_id, args) => {
        expectTypeOf(args).toEqualTypeOf<{ n: number }>();
        return result;
      },
    });
  });

  it('gives Record<string, unknown> for a JsonSchema value, never any', () => {
    const schema: JsonSchema = { type: 'object' };
    defineTool({
      name: 'plain',
      description: 'A schema whose type says nothing.',
      parameters: schema,
      execute: async (_id, args) => {
        expectTypeOf(args).toEqualTypeOf<Record<string, unknown>>();
        expectTypeOf(args).not.toBeAny();
        return result;
      },
    });
    expectTypeOf<ToolArguments<JsonSchema>>().toEqualTypeOf<Record<string, unknown>>();
  });

  it('takes an explicit argument type as given', () => {
    const tool = defineTool<{ value: string }>({
      name: 'explicit',
      description: 'Explicit arguments.',
      parameters: { type: 'object' },
      execute: async (_id, args) => {
        expectTypeOf(args).toEqualTypeOf<{ value: string }>();
        return result;
      },
    });
    const list: ToolDefinition[] = [tool];
    expect(list).toHaveLength(1);
  });

  it('types the built-in tools from their schemas', () => {
    expectTypeOf<ReadArgs>().toEqualTypeOf<{ path: string; offset?: number; limit?: number }>();
    expectTypeOf(createReadTool).returns.toEqualTypeOf<ToolDefinition<ReadArgs, ReadToolDetails | undefined>>();
  });
});

describe('defineTool approval check', () => {
  const base = {
    name: 'gated',
    description: 'A tool with an approval setting.',
    parameters: { type: 'object' },
    execute: async () => result,
  };

  it("throws a TypeError for an approval that is not 'never', 'always' or a function", () => {
    const message = "defineTool(gated): approval must be 'never', 'always' or a function (args, context) => boolean";
    for (const approval of ['sometimes', 'Always', '', 1, 0, true, null, {}, ['always']]) {
      let thrown: unknown;
      try {
        defineTool({ ...base, approval: approval as never });
      } catch (e) {
        thrown = e;
      }
      expect([JSON.stringify(approval), thrown instanceof TypeError, (thrown as Error | undefined)?.message]).toEqual([
        JSON.stringify(approval),
        true,
        message,
      ]);
    }
  });

  it("accepts 'never', 'always', a predicate or no approval and returns the definition unchanged", () => {
    for (const approval of ['never', 'always', () => true, undefined] as const) {
      const tool = { ...base, approval };
      expect(defineTool(tool)).toBe(tool);
    }
  });
});
