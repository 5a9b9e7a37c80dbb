/** common/tree/plain-arguments.ts: true only where the preparation activity would accept the arguments unchanged. */
import { describe, expect, it } from 'vitest';
import { TASK_INPUT_SCHEMA, agentTool, defineAgent, subAgentRecord } from '../../activities/agents/define-agent.js';
import { validateToolArguments } from '../../activities/tools/validate-arguments.js';
import { plainlyValid } from '../../common/tree/plain-arguments.js';

const typed = {
  type: 'object',
  title: 'Order',
  properties: {
    what: { type: 'string', description: 'the thing' },
    count: { type: 'integer' },
    ratio: { type: 'number' },
    urgent: { type: 'boolean' },
    tags: { type: 'array', items: { type: 'string' } },
    where: {
      type: 'object',
      properties: { city: { type: 'string' } },
      required: ['city'],
      additionalProperties: false,
    },
  },
  required: ['what'],
};

describe('plainlyValid', () => {
  it('arguments of exactly their declared types are plainly valid, and the activity leaves them unchanged', () => {
    const cases: [Record<string, unknown>, unknown][] = [
      [TASK_INPUT_SCHEMA, { task: 'look it up' }],
      [TASK_INPUT_SCHEMA, { task: '' }],
      [typed, { what: 'tea' }],
      [typed, { what: 'tea', count: 2, ratio: 0.5, urgent: false, tags: ['a', 'b'], where: { city: 'Oslo' } }],
    ];
    for (const [schema, args] of cases) {
      expect(plainlyValid(schema, args)).toBe(true);
      expect(validateToolArguments({ name: 't', parameters: schema }, { name: 't', arguments: args })).toEqual(args);
    }
  });

  it('anything else is left to the activity (false is "ask", not "invalid")', () => {
    for (const args of [
      {},
      { task: 5 }, // the activity coerces it to "5"
      { task: null },
      { task: 'x', extra: 1 },
      'look it up',
      ['look it up'],
      null,
      undefined,
    ])
      expect(plainlyValid(TASK_INPUT_SCHEMA, args)).toBe(false);
    for (const args of [
      { what: 'tea', count: 2.5 },
      { what: 'tea', count: '2' },
      { what: 'tea', ratio: Infinity },
      { what: 'tea', tags: 'a' },
      { what: 'tea', tags: [1] },
      { what: 'tea', where: { city: 'Oslo', zip: '0150' } },
      { what: 'tea', where: {} },
    ])
      expect(plainlyValid(typed, args)).toBe(false);
  });

  it('schemas with any other keyword are left to the activity', () => {
    const task = (extra: Record<string, unknown>) => ({
      type: 'object',
      properties: { task: { type: 'string', ...extra } },
      required: ['task'],
    });
    for (const schema of [
      task({ minLength: 1 }),
      task({ enum: ['a'] }),
      task({ default: 'a' }),
      task({ pattern: '^a' }),
      { ...TASK_INPUT_SCHEMA, additionalProperties: true },
      { ...TASK_INPUT_SCHEMA, $schema: 'https://json-schema.org/draft/2020-12/schema' },
      { ...TASK_INPUT_SCHEMA, required: ['task', 'missing'] },
      { type: 'object', properties: { task: { type: ['string', 'null'] } } },
      { type: 'object', properties: { task: { anyOf: [{ type: 'string' }] } } },
      { type: 'string' },
      null,
    ])
      expect(plainlyValid(schema, { task: 'a' })).toBe(false);
  });
});

describe('subAgentRecord', () => {
  const tool = agentTool(defineAgent({ name: 'helper', description: 'Helps.', systemPrompt: '', tools: [] }));
  const opts = { maxDepth: 3, callHooks: false, toolsElsewhere: false };

  it('direct only when nothing on the worker sees a call first', () => {
    expect(subAgentRecord(tool, opts)).toEqual({ ...tool.agent, maxDepth: 3, direct: true });
    expect(subAgentRecord(tool, { ...opts, callHooks: true }).direct).toBeUndefined();
    expect(subAgentRecord(tool, { ...opts, toolsElsewhere: true }).direct).toBeUndefined();
    expect(subAgentRecord({ ...tool, approval: 'always' }, opts).direct).toBeUndefined();
  });
});
