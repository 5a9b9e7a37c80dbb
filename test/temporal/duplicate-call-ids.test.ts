/**
 * Two tool calls with the same id in one assistant message (models do emit this): only the first runs, with its own
 * arguments; each later one gets an error result and is never executed, so no idempotency key covers two calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { duplicateToolCallId } from '../../common/errors.js';
import { steerSignal } from '../../workflows/definitions.js';
import {
  allEvents,
  notation,
  startKeel,
  strip,
  until,
  untilContinuedAsNew,
  workflowTaskFailures,
  type Keel,
} from './harness.js';

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
const gated = defineTool({
  name: 'gated',
  description: 'A non-idempotent side effect a person approves.',
  approval: 'always',
  parameters: { type: 'object', properties: { value: { type: 'string' } }, required: ['value'] },
  execute: async (id, args: { value: string }, _signal, _onUpdate, ctx) => {
    executions.push({ id, value: args.value, key: ctx.idempotencyKey });
    return { content: [{ type: 'text', text: `did ${args.value}` }] };
  },
});
const gatedTwice = [
  { id: 'same', name: 'gated', arguments: { value: 'first' } },
  { id: 'other', name: 'effect', arguments: { value: 'middle' } },
  { id: 'same', name: 'gated', arguments: { value: 'second' } },
];
const scripts = {
  dup: { rules: [{ match: 'toolResult:', text: 'done' }, { toolCalls: twice }] },
  gatedDup: {
    rules: [
      { match: 'toolResult:', text: 'done' },
      { match: 'steer-', text: 'saw the steer' },
      { toolCalls: gatedTwice },
    ],
  },
};
const toolResult = (toolName: string, text: string, isError = false) => ({
  role: 'toolResult',
  toolCallId: toolName === 'effect' ? 'other' : 'same',
  toolName,
  content: [{ type: 'text', text }],
  ...(isError ? { details: {} } : {}),
  isError,
});

describe('tool calls that share an id', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ scripts, tools: [effect, gated] });
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

  it('carried across continue-as-new while the first awaits approval: approved, it runs once with its own arguments; the duplicate is still refused', async () => {
    executions.length = 0;
    const h = await keel.start({
      model: 'scripted/gatedDup',
      prompt: 'go',
      tools: ['gated', 'effect'],
      continueAsNewAfterBytes: 65_536,
    });
    await until(async () => (await h.state()).pendingApprovals.length > 0, 20_000, 'approval pending');
    // the other call's end is in the run's state before the steer: continue-as-new is due with nothing running
    await until(async () => notation(await allEvents(h)).includes('TEE(other)'), 20_000, 'the other call done');
    const big = `steer-${'x'.repeat(70_000)}`;
    await h.workflow.signal(steerSignal, big); // 70 KB of history: continue-as-new is due while the call waits
    await untilContinuedAsNew(h);
    const pending = (await h.state()).pendingApprovals;
    expect(pending.map((p) => [p.toolCallId, p.args])).toEqual([['same', { value: 'first' }]]);
    await h.approve({ toolCallId: 'same', argsDigest: pending[0].argsDigest, approver: 'dana' });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(executions.sort((a, b) => a.value.localeCompare(b.value))).toEqual([
      { id: 'same', value: 'first', key: `${h.workflowId}/same` },
      { id: 'other', value: 'middle', key: `${h.workflowId}/other` },
    ]);
    const [approval] = (await h.state()).approvals;
    expect(approval).toMatchObject({ toolCallId: 'same', approver: 'dana', decision: 'approved' });
    expect(strip(await h.allMessages()).filter((m) => (m as { role: string }).role === 'toolResult')).toEqual([
      { ...toolResult('gated', 'did first'), details: { approval } },
      toolResult('effect', 'did middle'),
      toolResult('gated', duplicateToolCallId('same', 'gated'), true),
    ]);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});
