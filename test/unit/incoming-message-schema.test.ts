/**
 * Issue 22 item 3: which `followUp`/`steer` signal payloads the workflow accepts must not change silently. The
 * incoming-message schema (common/message-schemas.ts) replaces the hand-written check of 0.4.2
 * (`incomingMessageProblem`, kept below as the oracle, verbatim); over a table of well-formed and malformed entries
 * both accept exactly the same ones, so the change needs no `patched()`.
 */
import { describe, expect, it } from 'vitest';
import { incomingMessageLines } from '../../common/validate-messages.js';

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isNumber = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** 0.4.2's `blockProblem` (common/message-checks.ts), for user content. */
function blockProblem(b: unknown, i: number, allowed: string[]): string | undefined {
  if (!isObject(b)) return `content[${i}] must be an object`;
  if (!allowed.includes(b.type as string)) return `content[${i}].type must be one of ${allowed.join(', ')}`;
  if (b.type === 'text' && typeof b.text !== 'string') return `content[${i}].text must be a string`;
  if (b.type === 'image' && (typeof b.data !== 'string' || typeof b.mimeType !== 'string'))
    return `content[${i}] (image) needs string data and mimeType`;
  return undefined;
}

/** 0.4.2's `incomingMessageProblem` (common/message-checks.ts). */
function oldIncomingMessageProblem(m: unknown): string | undefined {
  if (typeof m === 'string') return undefined;
  if (!isObject(m)) return 'expected a string or { role: "user", content }';
  if (m.role !== 'user') return 'role must be "user"';
  if (m.timestamp !== undefined && !isNumber(m.timestamp)) return 'timestamp must be a number';
  if (typeof m.content === 'string') return undefined;
  if (!Array.isArray(m.content)) return 'content must be a string or an array of text and image blocks';
  for (let i = 0; i < m.content.length; i++) {
    const p = blockProblem(m.content[i], i, ['text', 'image']);
    if (p) return p;
  }
  return undefined;
}

const text = { type: 'text', text: 'a' };
const image = { type: 'image', data: 'AA==', mimeType: 'image/png' };
const ENTRIES: unknown[] = [
  'hi',
  '',
  42,
  true,
  null,
  [],
  ['hi'],
  {},
  { role: 'user' },
  { role: 'user', content: 'x' },
  { role: 'user', content: '' },
  { role: 'user', content: [] },
  { role: 'user', content: [text, image] },
  { role: 'user', content: 'x', timestamp: 5 },
  { role: 'user', content: 'x', timestamp: 1.5 },
  { role: 'user', content: 'x', timestamp: '5' },
  { role: 'user', content: 'x', timestamp: null },
  { role: 'user', content: 'x', extra: { any: 1 } },
  { role: 'User', content: 'x' },
  { role: 'assistant', content: 'x' },
  { role: 'toolResult', content: [text] },
  { content: 'x' },
  { role: 'user', content: 7 },
  { role: 'user', content: null },
  { role: 'user', content: { type: 'text', text: 'a' } },
  { role: 'user', content: [null] },
  { role: 'user', content: ['a'] },
  { role: 'user', content: [[]] },
  { role: 'user', content: [{}] },
  { role: 'user', content: [{ type: 'text' }] },
  { role: 'user', content: [{ type: 'text', text: 5 }] },
  { role: 'user', content: [{ type: 'text', text: 'a', textSignature: 5 }] },
  { role: 'user', content: [{ type: 'text', text: 'a', textSignature: 'sig' }] },
  { role: 'user', content: [{ type: 'text', text: 'a', extra: [1] }] },
  { role: 'user', content: [{ type: 'image', data: 'AA==' }] },
  { role: 'user', content: [{ type: 'image', data: 1, mimeType: 'image/png' }] },
  { role: 'user', content: [{ type: 'image', mimeType: 'image/png' }] },
  { role: 'user', content: [{ type: 'thinking', thinking: 'x' }] },
  { role: 'user', content: [{ type: 'toolCall', id: 'a', name: 'b', arguments: {} }] },
  { role: 'user', content: [{ type: 'TEXT', text: 'a' }] },
  { role: 'user', content: [text, { type: 'text', text: null }] },
];

describe('the incoming-message schema accepts exactly what the 0.4.2 signal check accepted', () => {
  it.each(ENTRIES.map((e) => [JSON.stringify(e), e]))('%s', (_, entry) => {
    const accepted = incomingMessageLines(entry, 'followUp').length === 0;
    expect(accepted).toBe(oldIncomingMessageProblem(entry) === undefined);
  });
});
