/**
 * The AG-UI translator (client/ag-ui/translate.ts) on a resumed connection: what the client already holds of a block is
 * unknown to it, so a replacing delta for a block it has not seen becomes a MESSAGES_SNAPSHOT, never text appended to
 * the client's copy (found by ag-ui.test.ts under load: the call ended while the client was away, and the reader's
 * replacing tail reached the new connection first).
 */
import { describe, expect, it } from 'vitest';
import type { BaseEvent } from '@ag-ui/core';
import { AgUiTranslator } from '../../client/ag-ui/translate.js';
import { emptyUsage, type Message } from '../../common/messages.js';
import { StreamOffset, type StreamEvent } from '../../common/stream.js';

const zero = emptyUsage();
const transcript: Message[] = [{ role: 'user', content: 'go', timestamp: 0 }];
const strip = (events: BaseEvent[]) => events.map(({ metadata: _m, ...e }) => e);

describe('a resumed AG-UI connection', () => {
  it('a replacing delta for a block it has not seen: a snapshot with the whole text, no appended content', async () => {
    const from = StreamOffset.delta(3, 5)!.value; // the client applied 5 delta items of the call after event 3
    const tr = new AgUiTranslator(async (n) => transcript.slice(0, n), zero, from);
    const tail = {
      type: 'message_update',
      messageIndex: 1,
      block: 0,
      kind: 'text',
      delta: 'turn 2 turn 2 turn 2',
      replace: true,
      offset: StreamOffset.tail(3, 0)!.value,
    } as StreamEvent;
    expect(strip(await tr.events(tail))).toEqual([
      { type: 'TEXT_MESSAGE_START', messageId: 'keel-1-0', role: 'assistant' },
      {
        type: 'MESSAGES_SNAPSHOT',
        messages: [
          { id: 'keel-0', role: 'user', content: 'go' },
          { id: 'keel-1-0', role: 'assistant', content: 'turn 2 turn 2 turn 2' },
        ],
      },
    ]);
  });

  it('a replacing delta that extends what the connection sent: only the rest, appended', async () => {
    const tr = new AgUiTranslator(async (n) => transcript.slice(0, n), zero, 0);
    const update = (delta: string, replace?: true) =>
      ({
        type: 'message_update',
        messageIndex: 1,
        block: 0,
        kind: 'text',
        delta,
        ...(replace ? { replace } : {}),
      }) as StreamEvent;
    expect(strip(await tr.events(update('turn 2 ')))).toEqual([
      { type: 'TEXT_MESSAGE_START', messageId: 'keel-1-0', role: 'assistant' },
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'keel-1-0', delta: 'turn 2 ' },
    ]);
    expect(strip(await tr.events(update('turn 2 turn 2', true)))).toEqual([
      { type: 'TEXT_MESSAGE_CONTENT', messageId: 'keel-1-0', delta: 'turn 2' },
    ]);
  });
});
