/**
 * Keel stream events → AG-UI events, for one connection. Text blocks become TEXT_MESSAGE_START / CONTENT / END,
 * thinking blocks REASONING_START / REASONING_MESSAGE_START / CONTENT / END / REASONING_END, tool calls
 * TOOL_CALL_START (when the model starts one) / ARGS / END (its final arguments, at the message's end) and
 * TOOL_CALL_RESULT (at the tool result's message), budget events and usage STATE_DELTAs. Every event carries
 * `metadata.keel.offset`, the Keel stream offset it came from: a client resumes after the last one it applied.
 *
 * A resumed connection re-opens (…_START with the same id) a block the client already holds before appending to it:
 * AG-UI clients reuse a message or tool call whose id they know. A retried model attempt (`attempt_reset`), a
 * replacing delta that does not extend the block, and a replacing delta for a block the connection has not seen (the
 * client may hold part of it) send a MESSAGES_SNAPSHOT of the transcript up to the streamed message (plus its blocks as they now
 * are), so the client's text is always a prefix of the final one, and at the end exactly it.
 */
import { EventType, type BaseEvent, type Message as AgUiMessage } from '@ag-ui/core';
import { addUsage, messageText, type AssistantMessage, type Message, type Usage } from '../../common/messages.js';
import type { MessageUpdateEvent, StreamEvent } from '../../common/stream.js';
import { argsText, assistantMessages, blockId, messageId, transcriptMessages } from './messages.js';

type Kind = MessageUpdateEvent['kind'];

/** What the translator needs of the run: its transcript's first `n` messages. */
export type TranscriptReader = (n: number) => Promise<Message[]>;

/** Translates one connection's Keel stream events; `events(e)` returns what to send for `e`, in order. */
export class AgUiTranslator {
  /** Blocks opened on this connection (their END is owed), by AG-UI id. */
  private readonly open = new Map<string, Kind>();
  /** Tool calls started on this connection. */
  private readonly started = new Set<string>();
  /** The streamed blocks' texts as this connection knows them, by message index. */
  private readonly blocks = new Map<number, { kind: Kind; text: string }[]>();
  private current: number | undefined;
  private offset: number;

  constructor(
    private readonly transcript: TranscriptReader,
    private usage: Usage,
    from: number,
  ) {
    this.offset = from;
  }

  /** The last Keel offset translated. */
  get lastOffset(): number {
    return this.offset;
  }

  /** The AG-UI events for Keel event `e`. */
  async events(e: StreamEvent): Promise<BaseEvent[]> {
    this.offset = e.offset ?? this.offset;
    const out = await this.translate(e);
    return out.map((ev) => ({ ...ev, metadata: { keel: { offset: this.offset } } }));
  }

  /** Decorates an event the caller makes (RUN_FINISHED, a snapshot) with the last offset. */
  stamp<T extends BaseEvent>(ev: T): T {
    return { ...ev, metadata: { keel: { offset: this.offset } } };
  }

  private async translate(e: StreamEvent): Promise<BaseEvent[]> {
    switch (e.type) {
      case 'message_update':
        return this.update(e);
      case 'attempt_reset':
        return this.reset(e.messageIndex);
      case 'message_end':
        return this.messageEnd(e.message, e.messageIndex);
      case 'budget_warning':
      case 'budget_exceeded':
        return [
          { type: EventType.STATE_DELTA, delta: [{ op: 'add', path: '/budgetEvents/-', value: e }] } as BaseEvent,
        ];
      default:
        return [];
    }
  }

  private async update(e: MessageUpdateEvent): Promise<BaseEvent[]> {
    this.current = e.messageIndex;
    const blocks = this.blocks.get(e.messageIndex) ?? [];
    this.blocks.set(e.messageIndex, blocks);
    const seen = blocks[e.block] !== undefined;
    const before = blocks[e.block]?.text ?? '';
    blocks[e.block] = { kind: e.kind, text: e.replace ? e.delta : before + e.delta };
    if (e.kind === 'toolCall') return this.toolStart(e.messageIndex, e.toolCallId, e.toolName);
    const id = blockId(e.messageIndex, e.block);
    const out = this.openBlock(id, e.kind);
    // a replacing delta for a block this connection has not seen (the reader could not tell what the client holds:
    // a resumed connection whose call ended while it was away) or one that does not extend it: the client's copy is
    // replaced by a snapshot, never appended to
    if (e.replace && (!seen || !e.delta.startsWith(before))) return [...out, await this.snapshot(e.messageIndex, true)];
    const delta = e.replace ? e.delta.slice(before.length) : e.delta;
    if (!delta) return out;
    const type = e.kind === 'text' ? EventType.TEXT_MESSAGE_CONTENT : EventType.REASONING_MESSAGE_CONTENT;
    return [...out, { type, messageId: id, delta } as BaseEvent];
  }

  private openBlock(id: string, kind: Kind): BaseEvent[] {
    if (this.open.has(id)) return [];
    this.open.set(id, kind);
    if (kind === 'text') return [{ type: EventType.TEXT_MESSAGE_START, messageId: id, role: 'assistant' } as BaseEvent];
    return [
      { type: EventType.REASONING_START, messageId: id } as BaseEvent,
      { type: EventType.REASONING_MESSAGE_START, messageId: id, role: 'reasoning' } as BaseEvent,
    ];
  }

  private closeBlock(id: string): BaseEvent[] {
    const kind = this.open.get(id);
    if (kind === undefined) return [];
    this.open.delete(id);
    if (kind === 'text') return [{ type: EventType.TEXT_MESSAGE_END, messageId: id } as BaseEvent];
    return [
      { type: EventType.REASONING_MESSAGE_END, messageId: id } as BaseEvent,
      { type: EventType.REASONING_END, messageId: id } as BaseEvent,
    ];
  }

  private toolStart(i: number, toolCallId: string | undefined, toolName: string | undefined): BaseEvent[] {
    if (toolCallId === undefined || this.started.has(toolCallId)) return [];
    this.started.add(toolCallId);
    const ev = {
      type: EventType.TOOL_CALL_START,
      toolCallId,
      toolCallName: toolName ?? '',
      parentMessageId: messageId(i),
    };
    return [ev as BaseEvent];
  }

  /** A retried attempt: the message's blocks end here, and the client's copy of them goes. */
  private async reset(i: number): Promise<BaseEvent[]> {
    const out = [...this.open.keys()]
      .filter((id) => id.startsWith(`${messageId(i)}-`))
      .flatMap((id) => this.closeBlock(id));
    this.blocks.delete(i);
    return [...out, await this.snapshot(i, false)];
  }

  /** MESSAGES_SNAPSHOT of the transcript before message `i`, with (`withCurrent`) its blocks as this connection knows them. */
  private async snapshot(i: number, withCurrent: boolean): Promise<BaseEvent> {
    const before = transcriptMessages((await this.transcript(i)).slice(0, i));
    // the message's text and thinking blocks as this connection knows them, at their indexes (tool calls: at its end)
    const content: AssistantMessage['content'] = [];
    (this.blocks.get(i) ?? []).forEach((b, k) => {
      if (b.kind === 'text') content[k] = { type: 'text', text: b.text };
      else if (b.kind === 'thinking') content[k] = { type: 'thinking', thinking: b.text };
    });
    const current: AgUiMessage[] = withCurrent ? assistantMessages(i, { content }) : [];
    return { type: EventType.MESSAGES_SNAPSHOT, messages: [...before, ...current] } as BaseEvent;
  }

  private messageEnd(m: Message, index: number | undefined): BaseEvent[] {
    if (m.role === 'toolResult') {
      const ev = { type: EventType.TOOL_CALL_RESULT, messageId: messageId(index ?? -1), toolCallId: m.toolCallId };
      return [{ ...ev, role: 'tool', content: messageText(m) } as BaseEvent];
    }
    if (m.role !== 'assistant') return [];
    const i = index ?? this.current ?? -1;
    this.current = undefined;
    this.usage = addUsage(this.usage, m.usage);
    const out: BaseEvent[] = [];
    m.content.forEach((block, b) => {
      if (block.type !== 'toolCall') return void out.push(...this.closeBlock(blockId(i, b)));
      out.push(...this.toolStart(i, block.id, block.name));
      out.push({ type: EventType.TOOL_CALL_ARGS, toolCallId: block.id, delta: argsText(block.arguments) } as BaseEvent);
      out.push({ type: EventType.TOOL_CALL_END, toolCallId: block.id } as BaseEvent);
      this.started.delete(block.id);
    });
    this.blocks.delete(i);
    out.push({
      type: EventType.STATE_DELTA,
      delta: [{ op: 'replace', path: '/usage', value: this.usage }],
    } as BaseEvent);
    return out;
  }
}
