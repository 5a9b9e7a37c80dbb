/**
 * The `callModel` heartbeat detail (docs/architecture.md#heartbeats): built by the activity from each streamed
 * snapshot, read by the next attempt (its usage and where its delta log goes on), by the workflow (a lost last
 * attempt's usage) and by the live stream (`AgentRunHandle.stream()`, which `keel run` / `keel watch` read: the
 * deltas). Bounded: the streamed text travels once, in the delta log's window (`deltas`, common/stream.ts).
 *
 * Shapes (`v`). Version 2 (0.7.0 on) carries the text only in `deltas`. 0.3–0.6.3 also carried the text's length and
 * its last 2048 characters (`textLength`, `tail`), and until 0.3 the whole partial message (`partial`); runs in flight
 * during a deploy may still hold such details, so every reader here also reads those shapes.
 */
import type { ModelHeartbeat } from './events.js';
import type { AssistantMessage, Usage } from './messages.js';
import type { HeartbeatDeltas } from './stream.js';

/** The version of the detail {@link modelHeartbeat} builds (absent in the details of workers before 0.7.0). */
export const MODEL_HEARTBEAT_VERSION = 2;

/** The detail for an attempt's snapshot `partial`: its usage, and the call's delta window when it streams. O(1). */
export function modelHeartbeat(
  partial: AssistantMessage,
  at: { attempt: number; seq: number; failedUsage?: Usage; deltas?: HeartbeatDeltas },
): ModelHeartbeat {
  return {
    kind: 'model',
    v: MODEL_HEARTBEAT_VERSION,
    attempt: at.attempt,
    seq: at.seq,
    usage: partial.usage,
    ...(at.failedUsage ? { failedUsage: at.failedUsage } : {}),
    ...(at.deltas ? { deltas: at.deltas } : {}),
  };
}

/**
 * The streamed text a model heartbeat shows: `tail` is text[textLength − tail.length, textLength); `textLength` is
 * absent when the delta window no longer reaches back to the attempt's start (the length is then unknown).
 */
export interface StreamedText {
  /** The attempt that streamed it (absent in 0.3 details). */
  attempt?: number;
  textLength?: number;
  tail: string;
}

/**
 * The streamed text (text blocks joined) of a model heartbeat of any shape; undefined before the attempt's first
 * delta. From a version 2 detail: what the delta window holds of the current attempt.
 */
export function streamedText(h: ModelHeartbeat): StreamedText | undefined {
  if (typeof h.textLength === 'number' && typeof h.tail === 'string')
    return { attempt: h.attempt, textLength: h.textLength, tail: h.tail };
  if (h.deltas && Array.isArray(h.deltas.items)) return windowText(h.deltas, h.attempt);
  if (!h.partial || !Array.isArray(h.partial.content)) return undefined;
  const text = h.partial.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
  return { textLength: text.length, tail: text };
}

/** The text of the current attempt in a delta window (from its last reset on). */
function windowText(deltas: HeartbeatDeltas, attempt: number | undefined): StreamedText | undefined {
  const reset = deltas.items.findLastIndex((it) => it.t === 'reset');
  const items = deltas.items.slice(reset + 1);
  if (!items.some((it) => it.t === 'delta')) return undefined;
  const complete = reset >= 0 || deltas.end === deltas.items.length;
  const blocks: string[] = [];
  for (const it of items)
    if (it.t === 'delta' && it.k === 'text') blocks[it.b] = it.r ? it.d : (blocks[it.b] ?? '') + it.d;
  const tail = blocks.join('');
  return { ...(attempt !== undefined ? { attempt } : {}), ...(complete ? { textLength: tail.length } : {}), tail };
}
