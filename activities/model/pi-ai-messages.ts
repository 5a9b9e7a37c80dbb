/**
 * pi-ai messages as Keel messages: the partial snapshots heartbeated while streaming (rebuilt from the deltas), the
 * aborted message, and the final message as plain JSON with secrets redacted and unknown stop reasons turned into errors.
 */
import type { Api, AssistantMessage as PiAssistantMessage, AssistantMessageEvent, Model } from '@earendil-works/pi-ai';
import { emptyUsage, type AssistantMessage, type StopReason } from '../../common/messages.js';
import { redactSecrets } from './classify-error.js';
import type { PartialGrowth } from '../../common/stream.js';

const ABORTED_MESSAGE = 'Request was aborted';
const KEEL_STOP_REASONS = new Set<string>(['stop', 'length', 'toolUse', 'error', 'aborted']);

type Block = PiAssistantMessage['content'][number];
type ToolCallBlock = Extract<Block, { type: 'toolCall' }>;

/**
 * The content as of the event being handled. pi-ai's `event.partial` is one live object that may already hold later
 * deltas when an event is consumed; its docs say text and thinking grow only through their `*_delta` events, so the
 * mirror rebuilds them from the deltas. A tool call's arguments are mirrored as the JSON text the model sent so far
 * (the `toolcall_delta` pieces appended), not as pi-ai's parsed partial object: a delta then costs O(its length) here
 * and in the live stream (copying or serialising the parsed object on every delta was quadratic in the arguments),
 * and the stream shows the arguments as the model writes them (Pi's `toolcall_delta` events carry the same pieces).
 * The final message, from pi-ai's result, has the parsed arguments.
 */
export class PartialMirror {
  private readonly content: (Block | undefined)[] = [];

  /** Applies `event`; for a delta, says which block of the next {@link snapshot} grew by what. */
  apply(event: AssistantMessageEvent): PartialGrowth | undefined {
    if (event.type === 'start' || event.type === 'done' || event.type === 'error') return undefined;
    const index = event.contentIndex;
    const live = event.partial.content[index];
    const own = this.content[index];
    switch (event.type) {
      case 'text_start':
        this.content[index] = { type: 'text', text: '' };
        return undefined;
      case 'thinking_start':
        this.content[index] = { type: 'thinking', thinking: '' };
        return undefined;
      case 'text_delta':
        if (own?.type !== 'text') return undefined;
        own.text += event.delta;
        return this.grew(index, event.delta);
      case 'thinking_delta':
        if (own?.type !== 'thinking') return undefined;
        own.thinking += event.delta;
        return this.grew(index, event.delta);
      case 'text_end':
        if (live?.type === 'text') this.content[index] = { ...live, text: event.content };
        return undefined;
      case 'thinking_end':
        if (live?.type === 'thinking') this.content[index] = { ...live, thinking: event.content };
        return undefined;
      case 'toolcall_start':
        if (live?.type === 'toolCall') this.content[index] = { ...live, arguments: ARGUMENTS_TEXT('') };
        return undefined;
      case 'toolcall_delta':
        if (own?.type !== 'toolCall') return undefined;
        own.arguments = ARGUMENTS_TEXT(argumentsText(own) + event.delta);
        return this.grew(index, event.delta);
      case 'toolcall_end': {
        // the text received stays what the stream showed; a call whose deltas never came shows its final arguments
        const text = own?.type === 'toolCall' ? argumentsText(own) : JSON.stringify(event.toolCall.arguments ?? {});
        this.content[index] = { ...event.toolCall, arguments: ARGUMENTS_TEXT(text) };
        return undefined;
      }
    }
    return undefined;
  }

  /** Block `index`'s position in the snapshot (which leaves out blocks the mirror did not see start). */
  private grew(index: number, text: string): PartialGrowth {
    let block = 0;
    for (let i = 0; i < index; i++) if (this.content[i] !== undefined) block++;
    return { block, text };
  }

  /** A Keel message of the live partial's fields with this content (stopReason is pi-ai's `pending`). */
  snapshot(live: PiAssistantMessage): AssistantMessage {
    const content = this.content.filter((b): b is Block => b !== undefined).map((b) => ({ ...b }));
    return { ...live, content, usage: { ...live.usage, cost: { ...live.usage.cost } } } as unknown as AssistantMessage;
  }
}

/** A tool call's arguments held as their JSON text while streaming (Keel's snapshots allow it; pi-ai's type does not). */
const ARGUMENTS_TEXT = (text: string): ToolCallBlock['arguments'] => text as unknown as ToolCallBlock['arguments'];
const argumentsText = (block: ToolCallBlock): string =>
  typeof block.arguments === 'string' ? (block.arguments as string) : '';

export function emptyMessage(model: Model<Api>): PiAssistantMessage {
  return {
    role: 'assistant',
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: emptyUsage(),
    stopReason: 'aborted',
    timestamp: Date.now(),
  };
}

/** A copy of a live partial that later deltas do not change (pi-ai mutates one message object). */
export function snapshot(partial: PiAssistantMessage): PiAssistantMessage {
  return {
    ...partial,
    content: partial.content.map((block) => ({ ...block })),
    usage: { ...partial.usage, cost: { ...partial.usage.cost } },
  };
}

export function abortedMessage(partial: PiAssistantMessage, secrets: Set<string>): AssistantMessage {
  return toKeelMessage({ ...partial, stopReason: 'aborted', errorMessage: ABORTED_MESSAGE }, secrets);
}

/** pi-ai's message as plain JSON (fields Keel does not type are kept when they are JSON), secrets redacted. */
export function toKeelMessage(message: PiAssistantMessage, secrets: Set<string>): AssistantMessage {
  const plain = JSON.parse(JSON.stringify(message)) as AssistantMessage & { stopReason: string };
  if (!KEEL_STOP_REASONS.has(plain.stopReason)) {
    plain.errorMessage = plain.errorMessage ?? `Unexpected stop reason: ${plain.stopReason}`;
    plain.stopReason = 'error';
  }
  if (plain.errorMessage !== undefined) plain.errorMessage = redactSecrets(plain.errorMessage, [...secrets]);
  return plain as AssistantMessage & { stopReason: StopReason };
}
