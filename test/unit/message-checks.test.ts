/**
 * The workflow's checks of the model activity's result (common/message-checks.ts), on the assistant-message and usage
 * schemas: the first problem, worded as every refusal is; a tool call's string arguments pass only when allowed.
 */
import { describe, expect, it } from 'vitest';
import { assistantMessageProblem, hasStringArguments, usageProblem } from '../../common/message-checks.js';
import { emptyUsage } from '../../common/messages.js';

const ok = {
  role: 'assistant',
  content: [
    { type: 'text', text: 'x' },
    { type: 'toolCall', id: 'c1', name: 'read', arguments: { path: 'a' } },
  ],
  api: 'a',
  provider: 'p',
  model: 'm',
  usage: emptyUsage(),
  stopReason: 'toolUse',
  timestamp: 1,
};
const stringArgs = { ...ok, content: [ok.content[0], { ...ok.content[1], arguments: '{"path":"a"}' }] };

describe('assistantMessageProblem, usageProblem, hasStringArguments', () => {
  it('a well-formed message has no problem', () => {
    expect(assistantMessageProblem(ok)).toBeUndefined();
    expect(assistantMessageProblem(ok, { stringArguments: true })).toBeUndefined();
  });

  it('the first problem, as <path>: <problem>', () => {
    expect(
      [
        null,
        { ...ok, role: 'user' },
        { ...ok, content: 'x' },
        { ...ok, content: [{ type: 'image', data: '', mimeType: '' }] },
        { ...ok, content: [{ type: 'toolCall', id: 'c', name: 'n' }] },
        { ...ok, stopReason: 'done' },
        { ...ok, errorMessage: 5 },
        { ...ok, usage: { ...emptyUsage(), output: '1' } },
      ].map((m) => assistantMessageProblem(m)),
    ).toEqual([
      'message: must be object',
      'role: must be "assistant"',
      'content: must be array',
      'content.0.type: must be one of "text", "thinking", "toolCall"',
      'content.0.arguments: is required',
      'stopReason: must be one of "stop", "length", "toolUse", "error", "aborted"',
      'errorMessage: must be string',
      'usage.output: must be number',
    ]);
  });

  it("a tool call's string arguments: a problem unless allowed", () => {
    expect(hasStringArguments(stringArgs)).toBe(true);
    expect(hasStringArguments(ok)).toBe(false);
    expect(hasStringArguments('x')).toBe(false);
    expect(assistantMessageProblem(stringArgs)).toBe('content.1.arguments: must be object');
    expect(assistantMessageProblem(stringArgs, { stringArguments: true })).toBeUndefined();
  });

  it('usage', () => {
    expect(usageProblem(emptyUsage())).toBeUndefined();
    expect(usageProblem(undefined)).toBe('usage: must be object');
    expect(usageProblem({ ...emptyUsage(), cost: { ...emptyUsage().cost, total: null } })).toBe(
      'usage.cost.total: must be number',
    );
  });
});
