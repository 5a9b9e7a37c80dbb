/**
 * The `callModel` heartbeat detail (docs/architecture.md#heartbeats): built by the activity from each streamed
 * snapshot, read by the next attempt (its usage), by the workflow (a lost last attempt's usage) and by `keel run` /
 * `keel watch` (the streamed text). Bounded: a detail carries the length of the text so far and only its last
 * {@link MODEL_HEARTBEAT_TAIL_CHARS} characters, never the whole message, so a long reply costs O(n) heartbeat bytes in
 * all rather than O(n²).
 *
 * Until 0.3 the detail carried the whole partial message (`partial`); runs in flight during a deploy may still hold
 * such details, so every reader here also reads that shape.
 */
import type { ModelHeartbeat } from './events.js';
import type { AssistantMessage, Usage } from './messages.js';
import type { HeartbeatDeltas } from './stream.js';

/** Most characters of the streamed text a heartbeat carries (its end). */
export const MODEL_HEARTBEAT_TAIL_CHARS = 2048;

/**
 * The detail for an attempt's snapshot `partial`: the text blocks joined (as the CLI shows them) are described by
 * their length and their last ≤ {@link MODEL_HEARTBEAT_TAIL_CHARS} characters (never starting inside a surrogate
 * pair); `usage` is the snapshot's. Cost O(blocks + tail), whatever the length of the text.
 */
export function modelHeartbeat(
  partial: AssistantMessage,
  at: { attempt: number; seq: number; failedUsage?: Usage; deltas?: HeartbeatDeltas },
): ModelHeartbeat {
  let textLength = 0;
  const texts: string[] = [];
  for (const b of partial.content) {
    if (b.type !== 'text') continue;
    textLength += b.text.length;
    texts.push(b.text);
  }
  let tail = '';
  for (let i = texts.length - 1; i >= 0 && tail.length < MODEL_HEARTBEAT_TAIL_CHARS; i--) {
    const need = MODEL_HEARTBEAT_TAIL_CHARS - tail.length;
    tail = (texts[i].length > need ? texts[i].slice(texts[i].length - need) : texts[i]) + tail;
  }
  const first = tail.charCodeAt(0);
  if (first >= 0xdc00 && first <= 0xdfff) tail = tail.slice(1); // the low half of a pair cut at the start
  return {
    kind: 'model',
    attempt: at.attempt,
    seq: at.seq,
    textLength,
    tail,
    usage: partial.usage,
    ...(at.failedUsage ? { failedUsage: at.failedUsage } : {}),
    ...(at.deltas ? { deltas: at.deltas } : {}),
  };
}

/** The streamed text a model heartbeat shows: `tail` is text[textLength − tail.length, textLength). */
export interface StreamedText {
  /** The attempt that streamed it (absent in 0.3 details). */
  attempt?: number;
  textLength: number;
  tail: string;
}

/** The streamed text of a model heartbeat of either shape; undefined before the attempt's first delta. */
export function streamedText(h: ModelHeartbeat): StreamedText | undefined {
  if (typeof h.textLength === 'number' && typeof h.tail === 'string')
    return { attempt: h.attempt, textLength: h.textLength, tail: h.tail };
  if (!h.partial || !Array.isArray(h.partial.content)) return undefined;
  const text = h.partial.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  return { textLength: text.length, tail: text };
}
