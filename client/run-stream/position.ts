/**
 * Where a reader stands in a run's stream and what the consumer holds of the call after it — shared by the heartbeat
 * reader (reader.ts) and the fleet transport's cursor (client/fleet-stream/cursor.ts): sending a call's delta items in
 * order, and an assistant message's tail, each advancing the offset (common/stream.ts) and the text held.
 */
import type { AssistantMessage } from '../../common/messages.js';
import { blockText, deltaEvent, StreamOffset, type DeltaItem, type StreamEvent } from '../../common/stream.js';

export class StreamPosition {
  /** The last offset sent (or the one resumed from). */
  at: StreamOffset;
  /** What the consumer holds of the blocks of the call after `at.seq` (undefined: unknown, resumed mid-call). */
  held: string[] | undefined;

  constructor(from: number) {
    this.at = StreamOffset.parse(from);
    this.held = this.at.kind === 'durable' ? [] : undefined;
  }

  /** After durable event `seq` was sent: nothing of the next call is held yet. */
  durable(seq: number): void {
    this.at = StreamOffset.durable(seq);
    this.held = [];
  }

  /**
   * Sends the call's `items` after `at` from the next number on, deleting each sent one (a gap waits for the tail, a
   * reset skips it).
   */
  *deltas(items: Map<number, DeltaItem>, messageIndex: number): Generator<StreamEvent> {
    for (;;) {
      const next = this.nextDelta(items);
      if (!next) return;
      const item = items.get(next.index)!;
      items.delete(next.index);
      if (item.t === 'reset') this.held = [];
      else if (this.held) this.held[item.b] = item.r ? item.d : (this.held[item.b] ?? '') + item.d;
      this.at = next;
      yield deltaEvent(item, messageIndex, next.value);
    }
  }

  /**
   * The offset of the next item to send: the next number, or past a gap the first reset (the items before the oldest
   * held one were never seen: only a reset, which clears the message, can follow such a gap without garbling it; else
   * the tail completes the message). Undefined: none now, or past a call's numbers.
   */
  private nextDelta(items: Map<number, DeltaItem>): StreamOffset | undefined {
    if (this.at.kind !== 'durable' && this.at.kind !== 'delta') return undefined; // its tail completes it
    let n = this.at.index + 1;
    if (!items.has(n)) {
      const reset = [...items.entries()].filter(([k, it]) => k > n && it.t === 'reset').map(([k]) => k);
      if (reset.length === 0) return undefined;
      n = Math.min(...reset);
    }
    return StreamOffset.delta(this.at.seq, n);
  }

  /** Before an assistant message's `message_start`: what the consumer lacks of each final block. */
  *tail(message: AssistantMessage, messageIndex: number): Generator<StreamEvent> {
    for (const [b, block] of message.content.entries()) {
      const offset = StreamOffset.tail(this.at.seq, b);
      if (!offset?.after(this.at)) continue;
      const text = blockText(block);
      const had = this.held?.[b] ?? (this.held ? '' : undefined);
      this.at = offset;
      if (had === text) continue;
      const tool = block.type === 'toolCall' ? { id: block.id, name: block.name } : {};
      const item: DeltaItem =
        had !== undefined && text.startsWith(had)
          ? { t: 'delta', b, k: block.type, d: text.slice(had.length), ...tool }
          : { t: 'delta', b, k: block.type, d: text, r: true, ...tool };
      yield deltaEvent(item, messageIndex, offset.value);
    }
  }
}
