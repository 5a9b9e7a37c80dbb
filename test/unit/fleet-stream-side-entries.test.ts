// The fleet stream's side entries (node-common/fleet-stream/entries.ts, since 0.11.0): a tool update and a run's close
// read back as written, beside the delta batches (neither is taken for a batch), a tool update sealed on an encrypting
// worker (no clear text in the store; another key ring cannot open it); a 0.11.0 worker's relayed entries say so.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { LoggedEvent, ToolHeartbeat } from '../../common/events.js';
import { EncryptionCodec, parseKeyRing } from '../../node-common/encryption.js';
import { closeFields, openTool, parseSide, parseStored, toolFields } from '../../node-common/fleet-stream/entries.js';
import { callEntry, eventEntry, relaysCloses } from '../../node-common/fleet-stream/relay-entries.js';

const ring = () =>
  parseKeyRing(JSON.stringify({ primary: 'k1', keys: { k1: randomBytes(32).toString('base64') } }), 'test');
const update: ToolHeartbeat = {
  kind: 'tool',
  toolCallId: 'call-1',
  toolName: 'shell',
  args: { cmd: 'make' },
  partialResult: { content: [{ type: 'text', text: 'the secret output' }] },
  updates: 3,
};

describe('fleet stream side entries', () => {
  it('a close reads back as written and is no batch', () => {
    const fields = closeFields('run-1', { ended: 'failed', lastSeq: 41 });
    expect(parseSide(fields)).toEqual({ kind: 'close', runId: 'run-1', ended: 'failed', lastSeq: 41 });
    expect(parseStored(fields)).toBeUndefined();
  });

  it('a tool update reads back as written, sealed on an encrypting worker', async () => {
    const plain = parseSide(await toolFields('run-1', update, []));
    expect(plain?.kind).toBe('tool');
    expect(await openTool(plain!.kind === 'tool' ? plain!.fields : new Map(), [])).toEqual(update);
    const codec = new EncryptionCodec(ring());
    const sealed = await toolFields('run-1', update, [codec]);
    expect(sealed.join(' ')).not.toContain('secret output');
    expect(parseStored(sealed)).toBeUndefined();
    const side = parseSide(sealed);
    if (side?.kind !== 'tool') throw new Error('not a tool update');
    expect(await openTool(side.fields, [codec])).toEqual(update);
    expect(await openTool(side.fields, [new EncryptionCodec(ring())])).toBeUndefined();
  });

  it("a 0.11.0 worker's relayed events and calls say that its close and tool updates come too", async () => {
    const [, ...event] = await eventEntry('run-1', { type: 'turn_start', turn: 1, seq: 2 } as LoggedEvent, []);
    const [, ...call] = callEntry('run-1', { messageIndex: 1, after: 2 });
    expect([relaysCloses(event), relaysCloses(call)]).toEqual([true, true]);
    expect(relaysCloses(['r', 'run-1', 's', '2', 'i', '{}'])).toBe(false); // a 0.10.0 worker's
    expect(parseSide(['r', 'run-1', 'k', 'other'])).toBeUndefined();
  });
});
