/** The difference between a recorded MCP input schema and a server's current one (activities/mcp/schema-change.ts). */
import { describe, expect, it } from 'vitest';
import { describeSchemaChange, schemaChange } from '../../activities/mcp/schema-change.js';

describe('schemaChange', () => {
  it('names the properties and keywords added, removed and changed; key order does not count', () => {
    const recorded = {
      type: 'object',
      properties: { text: { type: 'string', minLength: 1 }, mode: { enum: ['a', 'b'] } },
      required: ['text'],
    };
    expect(
      schemaChange(recorded, {
        required: ['text'],
        properties: { mode: { enum: ['a', 'b'] }, text: { minLength: 1, type: 'string' } },
        type: 'object',
      }),
    ).toBeUndefined();
    const c = schemaChange(recorded, {
      type: 'object',
      properties: { text: { type: 'string' }, lang: { type: 'string' } },
      required: ['text', 'lang'],
      additionalProperties: false,
    });
    expect(c).toEqual({
      added: ['additionalProperties', 'properties.lang'],
      removed: ['properties.mode'],
      changed: ['properties.text', 'required'],
    });
    expect(describeSchemaChange(c!)).toBe(
      'added: additionalProperties, properties.lang; removed: properties.mode; changed: properties.text, required',
    );
  });
});
