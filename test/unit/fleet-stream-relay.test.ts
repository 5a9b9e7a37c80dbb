// The fleet transport's relayed durable events (node-common/fleet-stream/relay-entries.ts,
// client/fleet-stream/relayed-events.ts): an event and a model call read back as written, under ids in the workflow's
// order; sealed on an encrypting worker; an event too long goes without its body; a reader sends events only in order,
// places a call after the event it follows, and sees a gap when one is missing.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { RelayedEvents } from '../../client/fleet-stream/relayed-events.js';
import type { LoggedEvent } from '../../common/events.js';
import { EncryptionCodec, parseKeyRing } from '../../node-common/encryption.js';
import {
  RELAYED_EVENT_MAX_CHARS,
  callEntry,
  eventEntry,
  openRelayEntry,
  type RelayEntry,
} from '../../node-common/fleet-stream/relay-entries.js';

const ring = () =>
  parseKeyRing(JSON.stringify({ primary: 'k1', keys: { k1: randomBytes(32).toString('base64') } }), 'test');
const start = (seq: number): LoggedEvent => ({ type: 'turn_start', turn: seq, seq }) as LoggedEvent;
const entry = (seq: number): RelayEntry => ({ kind: 'event', runId: 'r1', seq, event: start(seq) });

describe('relayed events', () => {
  it('an event and a call read back as written, their ids in the workflow order', async () => {
    const [id, ...fields] = await eventEntry('r1', start(7), []);
    expect(id).toBe('7-0');
    expect(await openRelayEntry(fields, [])).toEqual(entry(7));
    const [callId, ...call] = callEntry('r1', { messageIndex: 4, after: 7 });
    expect(callId).toBe('7-5');
    expect(await openRelayEntry(call, [])).toEqual({ kind: 'call', runId: 'r1', messageIndex: 4, after: 7 });
    expect(await openRelayEntry(['x', 'y'], [])).toBeUndefined();
  });

  it('sealed on an encrypting worker (no clear text); too long: no body', async () => {
    const codec = new EncryptionCodec(ring());
    const secret = { type: 'agent_end', messages: [{ role: 'user', content: 'the secret prompt' }], seq: 3 };
    const [, ...sealed] = await eventEntry('r1', secret as unknown as LoggedEvent, [codec]);
    expect(sealed.join(' ')).not.toContain('secret prompt');
    expect((await openRelayEntry(sealed, [codec])) as unknown).toEqual({
      kind: 'event',
      runId: 'r1',
      seq: 3,
      event: secret,
    });
    expect(await openRelayEntry(sealed, [new EncryptionCodec(ring())])).toEqual({ kind: 'event', runId: 'r1', seq: 3 });
    const long = { ...secret, messages: [{ role: 'user', content: 'x'.repeat(RELAYED_EVENT_MAX_CHARS) }] };
    const [, ...big] = await eventEntry('r1', long as unknown as LoggedEvent, []);
    expect(await openRelayEntry(big, [])).toEqual({ kind: 'event', runId: 'r1', seq: 3 });
  });

  it('a reader sends events in order, places a call after its event, and sees a gap', () => {
    const r = new RelayedEvents(2);
    expect(r.lastId).toBe('2-0');
    r.take([entry(1), entry(3), { kind: 'call', runId: 'r1', messageIndex: 5, after: 3 }, entry(5)], 2);
    expect(r.placedAt(2)).toEqual([]);
    expect(r.next(2)).toEqual(start(3));
    expect(r.placedAt(3)).toEqual([expect.objectContaining({ messageIndex: 5 })]);
    expect(r.next(3)).toBeUndefined(); // 4 missing
    expect(r.gap(3)).toBe(true);
    r.sent(4); // read from the workflow
    expect(r.next(4)).toEqual(start(5));
    expect(r.gap(5)).toBe(false);
    expect(r.placedAt(5)).toEqual([]);
    expect(r.relaying).toBe(true);
  });
});
