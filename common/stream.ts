/**
 * The live event stream of a run (docs/architecture.md#live-output): the durable events of the `events` query plus the
 * model's deltas, which travel in the `callModel` heartbeat (never in history), each with an offset a reader resumes
 * from.
 *
 * Offsets ({@link StreamOffset}, the one place that computes them). A durable event's offset is `seq × STREAM_OFFSET_SCALE`; the k-th (1-based) delta item of the model call that
 * runs after durable event `seq` has offset `seq × STREAM_OFFSET_SCALE + k`. No durable event is emitted while a model
 * call runs, so every reader numbers the same item alike; `seq` goes on across continue-as-new, so offsets do too.
 * Delta items are numbered across the attempts of one call: a retried attempt goes on from the last number the server
 * received from the attempt before, starting with an `attempt_reset`. The numbers from `STREAM_TAIL_BASE` (999,000) up
 * are the call's tail: before the assistant message's `message_start` (durable event `seq + 1`), the reader sends, per
 * content block `b` at `seq × STREAM_OFFSET_SCALE + STREAM_TAIL_BASE + b`, what its consumer still lacks of the final
 * block (an appending delta, or a replacing one when the reader cannot know what the consumer holds), so the deltas
 * applied in order always give the final text, even when a call completed between two heartbeats or two polls.
 */
import type { AssistantMessage } from './messages.js';
import type { LoggedEvent } from './events.js';

/** Offsets of durable events step by this; the deltas of a model call take the numbers in between. */
export const STREAM_OFFSET_SCALE = 1_000_000;

/**
 * Numbers from here up to {@link STREAM_TAIL_BASE} are tool updates: a reader sends the latest `onUpdate` snapshot of
 * each running tool (a tool heartbeat) at the next number after durable event `seq`, only once it has sent every
 * durable event before the `describe` that showed it (so after the tool's `tool_execution_start`, before its end).
 */
const STREAM_TOOL_BASE = 500_000;

/** Delta numbers from here up are a call's tail (one per content block), sent by the reader from the final message. */
const STREAM_TAIL_BASE = 999_000;

/** What an offset stands for: a durable event, a delta item of a model call, a tool update, or a block of a tail. */
export type StreamOffsetKind = 'durable' | 'delta' | 'tool' | 'tail';

/**
 * A stream offset: durable event `seq`, or the `n`-th number after it (a delta item, a tool update, a tail block).
 * Offsets compare as numbers; `value` is the number a consumer stores and resumes `from`.
 */
export class StreamOffset {
  private constructor(
    /** The durable event it is, or follows. */
    readonly seq: number,
    /** The number after `seq` (0: the durable event itself). */
    private readonly n: number,
  ) {}

  /** Durable event `seq`. */
  static durable(seq: number): StreamOffset {
    return new StreamOffset(seq, 0);
  }

  /** The `k`-th (from 1) delta item of the model call after durable event `seq`; undefined past a call's numbers. */
  static delta(seq: number, k: number): StreamOffset | undefined {
    return k >= 1 && k < STREAM_TOOL_BASE ? new StreamOffset(seq, k) : undefined;
  }

  /** The `k`-th (from 1) tool update after durable event `seq`; undefined past the tool updates' numbers. */
  static tool(seq: number, k: number): StreamOffset | undefined {
    return k >= 1 && STREAM_TOOL_BASE + k < STREAM_TAIL_BASE ? new StreamOffset(seq, STREAM_TOOL_BASE + k) : undefined;
  }

  /** The tail of content block `block` of the call after durable event `seq`; undefined past the tail's numbers. */
  static tail(seq: number, block: number): StreamOffset | undefined {
    return block >= 0 && STREAM_TAIL_BASE + block < STREAM_OFFSET_SCALE
      ? new StreamOffset(seq, STREAM_TAIL_BASE + block)
      : undefined;
  }

  /** The offset a number stands for (a negative or fractional one is taken as its floor, at least 0). */
  static parse(offset: number): StreamOffset {
    const o = Math.max(0, Math.floor(offset));
    return new StreamOffset(Math.floor(o / STREAM_OFFSET_SCALE), o % STREAM_OFFSET_SCALE);
  }

  get kind(): StreamOffsetKind {
    if (this.n === 0) return 'durable';
    if (this.n < STREAM_TOOL_BASE) return 'delta';
    return this.n < STREAM_TAIL_BASE ? 'tool' : 'tail';
  }

  /** Which one of its kind after `seq` it is: the delta's or tool update's number (from 1), the tail's block; 0. */
  get index(): number {
    const kind = this.kind;
    return kind === 'delta'
      ? this.n
      : kind === 'tool'
        ? this.n - STREAM_TOOL_BASE
        : kind === 'tail'
          ? this.n - STREAM_TAIL_BASE
          : 0;
  }

  /** The offset as the number a stream event carries. */
  get value(): number {
    return this.seq * STREAM_OFFSET_SCALE + this.n;
  }

  /** Whether this offset comes after `other`. */
  after(other: StreamOffset): boolean {
    return this.value > other.value;
  }
}

/**
 * Spacing of a streaming model call's heartbeats (activities/model/call-model.ts): they carry the live deltas, so this
 * bounds what the stream adds to a token's latency (tool heartbeats keep 250 ms). Readers poll in step with it
 * (client/run-stream/cadence.ts).
 */
export const STREAM_HEARTBEAT_MS = 80;

/** Most characters of delta text one heartbeat carries (the live window; an attempt's older items drop out). */
export const STREAM_WINDOW_CHARS = 16_384;

/** One item of a model call's delta log, as the heartbeat carries it. */
export type DeltaItem =
  /** A retried attempt starts over: drop what the earlier attempts of this call streamed. */
  | { t: 'reset'; attempt: number }
  /**
   * Content block `b` of kind `k` grew by `d` (or, with `r`, is now `d`: a snapshot that did not extend the last one,
   * e.g. re-parsed tool-call arguments). `id`/`name` name a tool call.
   */
  | { t: 'delta'; b: number; k: 'text' | 'thinking' | 'toolCall'; d: string; r?: true; id?: string; name?: string };

/** The delta log part of a model heartbeat: the items numbered [end − items.length, end) of the call. */
export interface HeartbeatDeltas {
  /** The transcript index the streamed assistant message will have. */
  messageIndex: number;
  end: number;
  items: DeltaItem[];
}

/** The text of a content block as streamed: tool calls by their arguments' JSON. */
export function blockText(b: AssistantMessage['content'][number]): string {
  if (b.type === 'text') return b.text;
  if (b.type === 'thinking') return b.thinking;
  return typeof b.arguments === 'string' ? b.arguments : JSON.stringify(b.arguments ?? {});
}

/**
 * What a provider's snapshot added to the one before it, when the provider knows (activities/model/provider.ts): the
 * streamed text of content block `block` (its text, its thinking, or a tool call's arguments as JSON text) grew by
 * `text` at its end. The recorder then takes `text` as the block's delta instead of comparing the block's whole text
 * with the last snapshot's, so a delta costs O(text), whatever the size of the block.
 */
export interface PartialGrowth {
  block: number;
  text: string;
}

/**
 * Records one call's delta items from the provider's partial snapshots (each block's new text against the last
 * snapshot's), keeping the last {@link STREAM_WINDOW_CHARS} characters of them for the heartbeat. `start` is the
 * number the earlier attempts reached (their last heartbeat's `end`); a retried attempt (`attempt` > 1) begins with a
 * reset item. A delta that extends the last item's block while no heartbeat or fleet append has taken that item yet
 * joins it (up to {@link MAX_ITEM_CHARS}): an item that went out never changes, and a window holds about one item per
 * block and heartbeat instead of one per provider delta (a 300-token reply: 300 items of ~40 bytes of JSON each, sent
 * whole again every heartbeat and decoded whole by every reader's poll).
 *
 * Cost per snapshot: O(blocks) plus, for a block that changed, O(its delta) when the provider says how it grew
 * ({@link PartialGrowth}), else O(its text) (the comparison with the last snapshot). A tool call whose arguments are an
 * object is serialised once per arguments object (a provider builds a new object when they change, as pi-ai does),
 * not once per snapshot; a block's text held as a string (the scripted model's and pi-ai's streaming tool calls, every
 * text and thinking block) is never copied.
 */
export class DeltaRecorder {
  /** The window: `items[head…]` (the items before `head` left it; they are dropped in batches, see `push`). */
  private items: (DeltaItem | undefined)[] = [];
  private head = 0;
  private chars = 0;
  private end: number;
  private readonly last: string[] = [];
  /** The arguments object each tool-call block's text in `last` was serialised from. */
  private readonly args: unknown[] = [];
  private total = 0;
  /** The items numbered up to this went out (a heartbeat's window, a fleet append): they never change. */
  private published: number;

  constructor(
    private readonly messageIndex: number,
    start: number,
    attempt: number,
  ) {
    this.end = start;
    this.published = start;
    if (attempt > 1) this.push({ t: 'reset', attempt });
  }

  /** Adds the items that take the last snapshot to `partial`; `grew`: what the provider says it added. */
  snapshot(partial: AssistantMessage, grew?: PartialGrowth): void {
    partial.content.forEach((block, b) => {
      const text = this.textOf(block, b);
      const before = this.last[b];
      if (text === before) return;
      this.last[b] = text;
      this.total += text.length - (before?.length ?? 0);
      const k = block.type;
      const tool = block.type === 'toolCall' ? { id: block.id, name: block.name } : {};
      if (grew?.block === b && before !== undefined && text.length === before.length + grew.text.length)
        this.push({ t: 'delta', b, k, d: grew.text, ...tool });
      else if (before !== undefined && !text.startsWith(before))
        this.push({ t: 'delta', b, k, d: text, r: true, ...tool });
      else this.push({ t: 'delta', b, k, d: text.slice(before?.length ?? 0), ...tool });
    });
  }

  /** Block `b`'s streamed text; an arguments object already serialised for this block is not serialised again. */
  private textOf(block: AssistantMessage['content'][number], b: number): string {
    if (block.type === 'toolCall' && typeof block.arguments === 'object' && block.arguments !== null) {
      if (this.args[b] === block.arguments && this.last[b] !== undefined) return this.last[b];
      this.args[b] = block.arguments;
    } else this.args[b] = undefined;
    return blockText(block);
  }

  /** Characters of the last snapshot's blocks (text, thinking, tool-call arguments as JSON text), all blocks together. */
  get streamedChars(): number {
    return this.total;
  }

  /** The block of the last snapshot with the most characters, and its length. */
  largestBlock(): { block: number; chars: number } {
    let best = { block: 0, chars: -1 };
    this.last.forEach((t, b) => {
      if (t !== undefined && t.length > best.chars) best = { block: b, chars: t.length };
    });
    return best;
  }

  private push(item: DeltaItem): void {
    this.chars += item.t === 'delta' ? item.d.length : 0;
    const last = this.items.length > this.head ? this.items[this.items.length - 1]! : undefined;
    if (this.end > this.published && item.t === 'delta' && !item.r && canJoin(last, item))
      this.items[this.items.length - 1] = { ...last, d: last.d + item.d };
    else {
      this.items.push(item);
      this.end += 1;
    }
    while (this.chars > STREAM_WINDOW_CHARS && this.items.length - this.head > 1) {
      const gone = this.items[this.head]!;
      this.items[this.head++] = undefined;
      this.chars -= gone.t === 'delta' ? gone.d.length : 0;
    }
    // drop what left the window in one copy now and then (Array#shift per item was O(window) at times)
    if (this.head >= 1024 && this.head * 2 >= this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
  }

  /**
   * The window's items numbered after `n` (those that left the window unseen are skipped: `first` says where the
   * returned ones start), for a transport that appends them as they come (the fleet transport).
   */
  itemsAfter(n: number): { first: number; items: DeltaItem[] } {
    this.published = this.end;
    const start = this.end - (this.items.length - this.head) + 1;
    const first = Math.max(n + 1, start);
    return { first, items: this.items.slice(this.head + first - start) as DeltaItem[] };
  }

  /** The heartbeat part: a copy of the window. */
  detail(): HeartbeatDeltas {
    this.published = this.end;
    return { messageIndex: this.messageIndex, end: this.end, items: this.items.slice(this.head) as DeltaItem[] };
  }

  /** The number the next attempt goes on from. */
  get next(): number {
    return this.end;
  }
}

/** Most characters one delta item holds when deltas that went out in no window yet join it ({@link DeltaRecorder}). */
export const MAX_ITEM_CHARS = 1024;

/** Whether `item` may join `last`: the same block, growing at its end, within {@link MAX_ITEM_CHARS}. */
function canJoin(
  last: DeltaItem | undefined,
  item: Extract<DeltaItem, { t: 'delta' }>,
): last is Extract<DeltaItem, { t: 'delta' }> {
  return (
    last?.t === 'delta' && last.b === item.b && last.k === item.k && last.d.length + item.d.length <= MAX_ITEM_CHARS
  );
}

/** A model delta as the stream delivers it. */
export interface MessageUpdateEvent {
  type: 'message_update';
  /** The transcript index of the assistant message being streamed. */
  messageIndex: number;
  /** Index of the content block in that message. */
  block: number;
  kind: 'text' | 'thinking' | 'toolCall';
  /** Text to append to the block (text, thinking, or the tool call's arguments as JSON text). */
  delta: string;
  /** When true, `delta` replaces the block's text instead of extending it. */
  replace?: true;
  toolCallId?: string;
  toolName?: string;
}

/** Before a retried model attempt's first delta: forget what earlier attempts streamed for `messageIndex`. */
export interface AttemptResetEvent {
  type: 'attempt_reset';
  messageIndex: number;
  attempt: number;
}

/**
 * A tool's latest `onUpdate` snapshot (`updates`: how many it has sent). A snapshot, not a log: a reader sends the
 * latest one it sees, at its next offset; one resuming after it gets the then latest of each tool still running.
 */
export interface ToolExecutionUpdateEvent {
  type: 'tool_execution_update';
  toolCallId: string;
  toolName: string;
  args: unknown;
  partialResult: unknown;
  updates: number;
}

/**
 * One event of `AgentRunHandle.stream()`: a durable event (with its `seq`), a model delta or a tool update, each with
 * its `offset` (pass the last one as `from` to resume).
 */
export type StreamEvent =
  | (LoggedEvent & { offset: number })
  | ((MessageUpdateEvent | AttemptResetEvent | ToolExecutionUpdateEvent) & { offset: number });

/** A heartbeat delta item as a stream event, at its offset. */
export function deltaEvent(
  item: DeltaItem,
  messageIndex: number,
  offset: number,
): (MessageUpdateEvent | AttemptResetEvent) & { offset: number } {
  if (item.t === 'reset') return { type: 'attempt_reset', messageIndex, attempt: item.attempt, offset };
  return {
    type: 'message_update',
    messageIndex,
    block: item.b,
    kind: item.k,
    delta: item.d,
    ...(item.r ? { replace: true as const } : {}),
    ...(item.id !== undefined ? { toolCallId: item.id, toolName: item.name } : {}),
    offset,
  };
}

/**
 * Applies a stream to the streamed assistant messages' blocks, as a screen would: a delta appends to its block (or
 * replaces it) and `attempt_reset` clears the message. At every step a block's text is a prefix of the final one
 * (after the last `attempt_reset`); once the call's tail came (before the message's `message_start`) it is the final
 * one. The message's `message_end` also sets its final blocks: a stream from a worker before 0.6.0, whose `events`
 * query names no `messageIndex`, may lack the tail of a call it did not see.
 */
export class StreamView {
  /** Blocks of each streamed assistant message, by transcript index. */
  readonly messages = new Map<number, { kind: MessageUpdateEvent['kind']; text: string }[]>();
  /** The message being streamed: the next assistant `message_end` is its final form. */
  private current: number | undefined;

  apply(e: StreamEvent): void {
    if (e.type === 'attempt_reset') {
      this.messages.set(e.messageIndex, []);
      this.current = e.messageIndex;
    } else if (e.type === 'message_update') {
      const blocks = this.messages.get(e.messageIndex) ?? [];
      const before = blocks[e.block]?.text ?? '';
      blocks[e.block] = { kind: e.kind, text: e.replace ? e.delta : before + e.delta };
      this.messages.set(e.messageIndex, blocks);
      this.current = e.messageIndex;
    } else if (e.type === 'message_end' && e.message.role === 'assistant' && this.current !== undefined) {
      // the final word: a call's last deltas may complete before a heartbeat carried them
      this.messages.set(
        this.current,
        e.message.content.map((b) => ({ kind: b.type, text: blockText(b) })),
      );
      this.current = undefined;
    }
  }

  /** The text blocks of message `i` joined (as `messageText` joins a final message's). */
  text(i: number): string {
    return (this.messages.get(i) ?? [])
      .filter((b) => b?.kind === 'text')
      .map((b) => b.text)
      .join('');
  }
}
