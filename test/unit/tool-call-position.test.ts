/**
 * Issue 10 item 7 (activity side): two tool calls with the same id in one assistant message. The tool activities look a
 * call up by its position (checking the id), so each execution gets its own arguments, and the idempotency keys differ.
 */
import { describe, expect, it } from 'vitest';
import { idempotencyKey, locateCall } from '../../activities/tools/tool-activities.js';
import type { ToolCall } from '../../common/messages.js';

const call = (id: string, value: string): ToolCall => ({ type: 'toolCall', id, name: 'pay', arguments: { value } });
const calls = [call('dup', 'first'), call('other', 'middle'), call('dup', 'second')];

describe('tool calls are located by position', () => {
  it('the later duplicate is its own call, with its own arguments', () => {
    expect(calls[locateCall(calls, 'dup', 2)!].arguments).toEqual({ value: 'second' });
    expect(calls[locateCall(calls, 'dup', 0)!].arguments).toEqual({ value: 'first' });
  });

  it('a position whose id does not match, or out of range, finds nothing', () => {
    expect(locateCall(calls, 'dup', 1)).toBeUndefined();
    expect(locateCall(calls, 'dup', 3)).toBeUndefined();
    expect(locateCall(calls, 'dup', 0.5)).toBeUndefined();
  });

  it('without a position (older workflows): the first call with the id', () => {
    expect(locateCall(calls, 'dup', undefined)).toBe(0);
    expect(locateCall(calls, 'nope', undefined)).toBeUndefined();
  });

  it('idempotency keys: `<wf>/<id>` for the first use of an id, `<wf>/<id>#<position>` for a later duplicate', () => {
    expect(calls.map((_, k) => idempotencyKey('wf-1', calls, k))).toEqual(['wf-1/dup', 'wf-1/other', 'wf-1/dup#2']);
  });
});
