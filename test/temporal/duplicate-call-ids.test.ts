/**
 * Two tool calls with the same id in one assistant message (models do emit this): only the first runs, with its own
 * arguments; each later one gets an error result and is never executed, so no idempotency key covers two calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { duplicateToolCallId } from '../../common/errors.js';
import { startKeel, strip, workflowTaskFailures, type Keel } from './harness.js';

const executions: { id: string; value: string; key: string }[] = [];
const effect = defineTool({
  name: 'effect',
  description: 'A non-idempotent side effect.',
  parameters: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
  execute: async (id, args: { value: string }, _signal, _onUpdate, ctx) => {
    executions.push({ id, value: args.value, key: ctx.idempotencyKey });
    return { content: [{ type: 'text', text: `did ${args.value}` }] };
  },
});

const twice = [
  { id: 'same', name: 'effect', arguments: { value: 'first' } },
  { id: 'other', name: 'effect', arguments: { value: 'middle' } },
  { id: 'same', name: 'effect', arguments: { value: 'second' } },
];
const scripts = { dup: { rules: [{ match: 'toolResult:', text: 'done' }, { toolCalls: twice }] } };

describe('tool calls that share an id', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [effect] });
  });
  afterAll(() => keel?.stop());

  for (const toolExecution of ['parallel', 'sequential'] as const) {
    it(`${toolExecution}: the first runs with its own arguments, the later duplicate is refused and never executed`, async () => {
      executions.length = 0;
      const h = await keel.start({ model: 'scripted/dup', prompt: 'go', tools: ['effect'], toolExecution });
      const r = await h.result();
      expect(r.status).toBe('completed');
      expect(executions.sort((a, b) => a.value.localeCompare(b.value))).toEqual([
        { id: 'same', value: 'first', key: `${h.workflowId}/same` },
        { id: 'other', value: 'middle', key: `${h.workflowId}/other` },
      ]);
      expect(strip(r.newMessages.filter((m) => m.role === 'toolResult'))).toEqual([
        {
          role: 'toolResult',
          toolCallId: 'same',
          toolName: 'effect',
          content: [{ type: 'text', text: 'did first' }],
          isError: false,
        },
        {
          role: 'toolResult',
          toolCallId: 'other',
          toolName: 'effect',
          content: [{ type: 'text', text: 'did middle' }],
          isError: false,
        },
        {
          role: 'toolResult',
          toolCallId: 'same',
          toolName: 'effect',
          content: [{ type: 'text', text: duplicateToolCallId('same', 'effect') }],
          details: {},
          isError: true,
        },
      ]);
      expect(await workflowTaskFailures(h)).toEqual([]);
    });
  }
});
