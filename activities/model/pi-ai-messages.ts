/**
 * pi-ai messages as Keel messages: the partial snapshots heartbeated while streaming (rebuilt from the deltas), the
 * aborted message, and the final message as plain JSON with secrets redacted and unknown stop reasons turned into errors.
 */
import type { Api, AssistantMessage as PiAssistantMessage, AssistantMessageEvent, Model } from '@earendil-works/pi-ai';
import { emptyUsage, type AssistantMessage, type StopReason } from '../../common/messages.js';
import { redactSecrets } from './classify-error.js';

const ABORTED_MESSAGE = 'Request was aborted';
const KEEL_STOP_REASONS = new Set<string>(['stop', 'length', 'toolUse', 'error', 'aborted']);

type Block = PiAssistantMessage['content'][number];

/**
 * The content as of the event being handled. pi-ai's `event.partial` is one live object that may already hold later
 * deltas when an event is consumed; its docs say text and thinking grow only through their `*_delta` events, so the
 * mirror rebuilds them from the deltas (tool-call arguments are copied, being parsed partial JSON).
 */
export class PartialMirror {
  private readonly content: Block[] = [];

  apply(event: AssistantMessageEvent): void {
    if (event.type === 'start' || event.type === 'done' || event.type === 'error') return;
    const index = event.contentIndex;
    const live = event.partial.content[index];
    const own = this.content[index];
    switch (event.type) {
      case 'text_start':
        this.content[index] = { type: 'text', text: '' };
        break;
      case 'thinking_start':
        this.content[index] = { type: 'thinking', thinking: '' };
        break;
      case 'text_delta':
        if (own?.type === 'text') own.text += event.delta;
        break;
      case 'thinking_delta':
        if (own?.type === 'thinking') own.thinking += event.delta;
        break;
      case 'text_end':
        if (live?.type === 'text') this.content[index] = { ...live, text: event.content };
        break;
      case 'thinking_end':
        if (live?.type === 'thinking') this.content[index] = { ...live, thinking: event.content };
        break;
      case 'toolcall_start':
      case 'toolcall_delta':
        if (live?.type === 'toolCall') this.content[index] = { ...live, arguments: structuredClone(live.arguments) };
        break;
      case 'toolcall_end':
        this.content[index] = { ...event.toolCall, arguments: structuredClone(event.toolCall.arguments) };
        break;
    }
  }

  /** A Keel message of the live partial's fields with this content (stopReason is pi-ai's `pending`). */
  snapshot(live: PiAssistantMessage): AssistantMessage {
    const content = this.content.filter((b): b is Block => b !== undefined).map((b) => ({ ...b }));
    return { ...live, content, usage: { ...live.usage, cost: { ...live.usage.cost } } } as unknown as AssistantMessage;
  }
}

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
