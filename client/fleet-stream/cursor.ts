/**
 * Where a fleet-transport reader stands in a run's stream (client/fleet-stream/store-reader.ts) and what it sends next:
 * the model calls' delta batches from the store, each placed after the durable event it follows, and the durable
 * events read from the workflow, each assistant `message_start` preceded by its call's tail (common/stream.ts), so the
 * deltas applied in order give the final text exactly, whatever batches the store lost or trimmed.
 *
 * Placing a call. No durable event is emitted while a model call runs, and a call's first batch is appended after
 * the workflow task that scheduled it completed. So an `events` read asked after a batch of a call still running was
 * seen returns every durable event before that call: the call follows the read's last event. A call that completed
 * before it was placed goes right before its message's `message_start`.
 */
import type { LoggedEvent, ToolHeartbeat } from '../../common/events.js';
import type { AssistantMessage } from '../../common/messages.js';
import { StreamOffset, type DeltaItem, type StreamEvent } from '../../common/stream.js';
import type { DeltaBatch } from '../../node-common/fleet-stream/entries.js';
import { StreamPosition } from '../run-stream/position.js';

/** A model call as the store showed it: its items not sent yet, whether an attempt completed, where it goes. */
interface Call {
  runId: string;
  messageIndex: number;
  items: Map<number, DeltaItem>;
  ended: boolean;
  /** The durable event it follows, once known. */
  base?: number;
}

export class StreamCursor {
  /** The last offset sent (or the one resumed from) and what the consumer holds of the call after it. */
  private readonly pos: StreamPosition;
  private readonly calls = new Map<string, Call>();
  /** The highest transcript index of the messages sent. */
  private sentIndex = -1;
  /** The `updates` count of each tool's last update sent. */
  private readonly toolUpdates = new Map<string, number>();
  /** Tool calls whose start was sent (true) and then their end (false). */
  private readonly tools = new Map<string, boolean>();

  constructor(from: number) {
    this.pos = new StreamPosition(from);
  }

  /** The last offset sent. */
  get offset(): number {
    return this.pos.at.value;
  }

  /** The last durable event sent: an `events` read asks for the ones after it. */
  get seq(): number {
    return this.pos.at.seq;
  }

  /** Keeps a batch's items not sent yet. */
  note(b: DeltaBatch): void {
    if (b.messageIndex <= this.sentIndex) return; // its message was sent
    const key = `${b.runId}/${b.messageIndex}`;
    let c = this.calls.get(key);
    if (!c) this.calls.set(key, (c = { runId: b.runId, messageIndex: b.messageIndex, items: new Map(), ended: false }));
    if (b.end) c.ended = true;
    const past = c.base === this.pos.at.seq ? this.deltasPassed() : 0;
    b.items.forEach((item, i) => {
      if (b.first + i > past) c.items.set(b.first + i, item);
    });
  }

  /** Whether a call of a run still running waits to be placed (an `events` read places it). */
  unplaced(): string | undefined {
    return [...this.calls.values()].find((c) => c.base === undefined && !c.ended && c.messageIndex > this.sentIndex)
      ?.runId;
  }

  /** After a read of run `runId`'s events was sent: its call still running (the latest) follows the last one. */
  placeRunning(runId: string): void {
    if (this.callHere()) return;
    const running = [...this.calls.values()].filter(
      (c) => c.runId === runId && c.base === undefined && !c.ended && c.messageIndex > this.sentIndex,
    );
    const latest = running.sort((a, b) => b.messageIndex - a.messageIndex)[0];
    if (latest) latest.base = this.pos.at.seq;
  }

  /** A call the workflow relayed as following the last durable event sent (when its batches came and none is here). */
  place(runId: string, messageIndex: number): void {
    const c = this.calls.get(`${runId}/${messageIndex}`);
    if (c && c.base === undefined && !this.callHere()) c.base = this.pos.at.seq;
  }

  /** The delta numbers after `at.seq` already passed: all of them once a tool update or a tail was sent. */
  private deltasPassed(): number {
    const kind = this.pos.at.kind;
    return kind === 'durable' ? 0 : kind === 'delta' ? this.pos.at.index : Infinity;
  }

  /** The call placed after durable event `at.seq`, if any. */
  private callHere(): Call | undefined {
    return [...this.calls.values()].find((c) => c.base === this.pos.at.seq);
  }

  /** Sends what is held of the call after `at.seq`, from the next number on (a gap waits for the tail). */
  *deltas(): Generator<StreamEvent> {
    const c = this.callHere();
    if (c) yield* this.pos.deltas(c.items, c.messageIndex);
  }

  /** Durable events, each preceded by what is held of the call before it (and an assistant message by its tail). */
  *durable(events: LoggedEvent[]): Generator<StreamEvent> {
    for (const e of events) {
      const start = e.type === 'message_start' && e.message.role === 'assistant' ? e : undefined;
      if (start?.messageIndex !== undefined) this.placeCompleted(start.messageIndex);
      yield* this.deltas();
      const index = start && (start.messageIndex ?? this.callHere()?.messageIndex);
      if (start && index !== undefined) yield* this.pos.tail(start.message as AssistantMessage, index);
      if ((e.type === 'message_start' || e.type === 'message_end') && e.messageIndex !== undefined)
        this.sentIndex = Math.max(this.sentIndex, e.messageIndex);
      if (e.type === 'tool_execution_start' || e.type === 'tool_execution_end')
        this.tools.set(e.toolCallId, e.type === 'tool_execution_start');
      this.pos.durable(e.seq);
      this.forget();
      yield { ...e, offset: this.pos.at.value };
    }
  }

  /** A call not placed while it ran: what the store kept of it goes before its message. */
  private placeCompleted(messageIndex: number): void {
    const c = [...this.calls.values()].findLast((c) => c.messageIndex === messageIndex && c.base === undefined);
    if (c && !this.callHere()) c.base = this.pos.at.seq;
  }

  /** Forgets the calls whose message was sent. */
  private forget(): void {
    for (const [key, c] of this.calls)
      if (c.messageIndex <= this.sentIndex && (c.base === undefined || c.base < this.pos.at.seq))
        this.calls.delete(key);
  }

  /** Whether tool call `toolCallId`'s start was sent and its end was not (true), both were (false), or neither. */
  toolRunning(toolCallId: string): boolean | undefined {
    return this.tools.get(toolCallId);
  }

  /** The running tools' latest updates not sent yet (only when every durable event before them was sent). */
  *toolUpdatesOf(tools: ToolHeartbeat[]): Generator<StreamEvent> {
    for (const t of tools) {
      if (this.toolUpdates.get(t.toolCallId) === t.updates) continue;
      const { kind, seq, index } = this.pos.at;
      const next = kind === 'tail' ? undefined : StreamOffset.tool(seq, kind === 'tool' ? index + 1 : 1);
      if (!next) continue;
      this.toolUpdates.set(t.toolCallId, t.updates);
      this.pos.at = next;
      const { toolCallId, toolName, args, partialResult, updates } = t;
      yield { type: 'tool_execution_update', toolCallId, toolName, args, partialResult, updates, offset: next.value };
    }
  }
}
