import type { Message } from './messages.js';

/** Digest of the empty transcript. */
export const EMPTY_DIGEST = 0x811c9dc5;

/**
 * Chained digest of a transcript prefix: `digest(prefix + m) = nextDigest(digest(prefix), m)`, over each message's
 * identity (role, tool call ids, stop reason, timestamp, content length). The workflow sends the digest of the prefix an
 * activity needs; the activity's cache serves it without a query when its copy has the same digest. A different
 * message (for instance from an attempt whose completion was lost) changes the digest, and costs only a re-read.
 */
export function nextDigest(prev: number, m: Message): number {
  let key = `${m.role}|${m.timestamp}|${Array.isArray(m.content) ? m.content.length : m.content.length}`;
  if (m.role === 'assistant')
    key += `|${m.stopReason}|${m.content.map((b) => (b.type === 'toolCall' ? b.id : b.type)).join(',')}`;
  if (m.role === 'toolResult') key += `|${m.toolCallId}|${m.isError}`;
  let h = prev >>> 0;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/** Digests of every prefix: `result[i]` covers messages[0, i). */
export function prefixDigests(messages: Message[]): number[] {
  const out = [EMPTY_DIGEST];
  for (const m of messages) out.push(nextDigest(out[out.length - 1], m));
  return out;
}
