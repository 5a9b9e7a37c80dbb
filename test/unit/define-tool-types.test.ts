/**
 * `defineTool` types `execute`'s arguments from `parameters` (activities/tools/define-tool.ts `ToolArguments`). The
 * assertions are type-level: `npx tsc --noEmit -p .` fails when the inference is lost; vitest runs the same file.
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
