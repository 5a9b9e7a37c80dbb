import { describe, expect, it } from 'vitest';
import { cancelReasonErrors } from '../../common/updates.js';
import { assistantMessageErrors, incomingMessagesErrors } from '../../common/validate-messages.js';

describe('message validators (common/validate-messages.ts)', () => {
  it('incoming messages: one line per problem, list entries labelled by index', () => {
    expect(incomingMessagesErrors('hi', 'followUp')).toEqual([]);
    expect(
      incomingMessagesErrors({
        role: 'user',
        content: [
          { type: 'text', text: 'a' },
          { type: 'image', data: 'AA==', mimeType: 'image/png' },
        ],
      }),
    ).toEqual([]);
    expect(
      incomingMessagesErrors(
        [
          'ok',
          { role: 'user' },
          5,
          { role: 'assistant', content: 'x' },
          { role: 'user', content: [{ type: 'image', data: 1 }] },
        ],
        'steer',
      ),
    ).toEqual([
      'steer.1.content: is required',
      'steer.2: must be text or a user message { role: "user", content }',
      'steer.3.role: must be "user"',
      'steer.4.content.0.mimeType: is required',
      'steer.4.content.0.data: must be string',
    ]);
  });

  it('assistant messages: every field the workflow reads is typed', () => {
    const usage = {
      input: 0,
      output: 0,
      cacheRead: 0,
      cacheWrite: 0,
      totalTokens: 0,
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
    };
    const ok = {
      role: 'assistant',
      content: [{ type: 'text', text: 'x' }],
      api: 'a',
      provider: 'p',
      model: 'm',
      usage,
      stopReason: 'stop',
      timestamp: 1,
      responseId: 'extra ok',
    };
    expect(assistantMessageErrors(ok)).toEqual([]);
    expect(
      assistantMessageErrors({ ...ok, usage: { ...usage, cost: { ...usage.cost, total: '0.1' } }, stopReason: 'done' }),
    ).toEqual([
      'usage.cost.total: must be number',
      'stopReason: must be one of "stop", "length", "toolUse", "error", "aborted"',
    ]);
  });

  it('cancel reasons', () => {
    expect([
      cancelReasonErrors(undefined),
      cancelReasonErrors(null),
      cancelReasonErrors('why'),
      cancelReasonErrors(5),
    ]).toEqual([[], [], [], ['cancel: the reason must be text, got 5']]);
  });
});
