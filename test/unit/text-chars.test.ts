/**
 * `textChars` (workflows/agent/continue-as-new.ts): the lower bound that spares a large run's continue-as-new and
 * result from serialising a transcript of ≈ 100 MB to learn it is over the 1.5 MB cap.
 */
import { describe, expect, it } from 'vitest';
import { emptyUsage, type Message } from '../../common/messages.js';
import { textChars } from '../../workflows/agent/continue-as-new.js';

const transcript: Message[] = [
  { role: 'user', content: 'say "hi"\n', timestamp: 1 },
  { role: 'user', content: [{ type: 'text', text: 'ünïcode ✓ \u{1F600}' }], timestamp: 2 },
  {
    role: 'assistant',
    content: [
      { type: 'thinking', thinking: 'hmm\t' },
      { type: 'text', text: 'calling' },
      { type: 'toolCall', id: 't1', name: 'echo', arguments: { text: 'x'.repeat(50) } },
    ],
    api: 'anthropic-messages',
    provider: 'anthropic',
    model: 'm',
    usage: emptyUsage(),
    stopReason: 'toolUse',
    timestamp: 3,
  },
  {
    role: 'toolResult',
    toolCallId: 't1',
    toolName: 'echo',
    content: [{ type: 'text', text: 'y'.repeat(40) }],
    isError: false,
    timestamp: 4,
  },
];

describe('textChars counts text, thinking and string content, never more than their JSON', () => {
  it('sums exactly the text of every kind of message', () => {
    expect(textChars(transcript)).toBe(9 + 'ünïcode ✓ \u{1F600}'.length + 4 + 7 + 40);
  });
  it('is at most the JSON length of the messages, and of each one (escapes and surrogates only add)', () => {
    expect(textChars(transcript)).toBeLessThanOrEqual(JSON.stringify(transcript).length);
    for (const m of transcript) expect(textChars([m])).toBeLessThan(JSON.stringify(m).length);
    const escapes: Message = { role: 'user', content: '"\\\n\u0001\ud800', timestamp: 1 };
    expect(textChars([escapes])).toBe(5);
    expect(JSON.stringify(escapes.content).length).toBe(2 + 2 + 2 + 2 + 6 + 6);
  });
});
