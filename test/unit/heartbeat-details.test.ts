/**
 * client/heartbeat-details.ts: a stream reader's poll that finds an activity's heartbeat details unchanged reuses their
 * last decode instead of opening and parsing the model call's delta window again; changed details, another activity,
 * other metadata or a forgotten key are decoded afresh; sealed details open through the client's codecs, and a
 * payload it cannot open or convert still rejects.
 */
import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { loadDataConverter } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { describe, expect, it } from 'vitest';
import { HeartbeatDetailsDecoder } from '../../client/heartbeat-details.js';
import { EncryptionCodec, parseKeyRing } from '../../node-common/encryption.js';

const ring = parseKeyRing(JSON.stringify({ primary: 'k1', keys: { k1: randomBytes(32).toString('base64') } }), 'test');
const codec = new EncryptionCodec(ring);
/** A client's data converter: Keel's codec over the default payload converter (AgentClient with `encryption`). */
const converter = loadDataConverter({ payloadCodecs: [codec] });
const newDecoder = () => new HeartbeatDetailsDecoder(converter);

const window = (end: number) => ({
  kind: 'model',
  deltas: {
    messageIndex: 2,
    end,
    items: Array.from({ length: end }, (_, i) => ({ t: 'delta', b: 0, k: 'text', d: `t${i} ` })),
  },
});
/** The payload a `describe` returns: fresh bytes every time, as the gRPC client decodes each response anew. */
const described = (value: unknown): Payload => {
  const p = defaultPayloadConverter.toPayload(value)!;
  return { metadata: { ...p.metadata }, data: Uint8Array.from(p.data!) };
};

describe('HeartbeatDetailsDecoder', () => {
  it('returns the same value, not parsed again, while the details are unchanged', async () => {
    const d = newDecoder();
    d.poll();
    const first = await d.decode('run/1', described(window(300)));
    expect(first).toEqual(window(300));
    d.poll();
    expect(await d.decode('run/1', described(window(300)))).toBe(first);
    d.poll();
    expect(await d.decode('run/1', described(window(300)))).toBe(first);
  });

  it('decodes changed details, another activity and other metadata afresh', async () => {
    const d = newDecoder();
    d.poll();
    const first = await d.decode('run/1', described(window(3)));
    d.poll();
    const grown = await d.decode('run/1', described(window(4)));
    expect(grown).toEqual(window(4));
    expect(await d.decode('run/2', described(window(4)))).not.toBe(grown);
    d.poll();
    const raw = described(window(4));
    await expect(
      d.decode('run/1', { ...raw, metadata: { encoding: new TextEncoder().encode('binary/encrypted') } }),
    ).rejects.toThrow();
    expect(first).toEqual(window(3));
  });

  it('forgets an activity that a poll did not see', async () => {
    const d = newDecoder();
    d.poll();
    const first = await d.decode('run/1', described(window(2)));
    d.poll();
    d.poll();
    const again = await d.decode('run/1', described(window(2)));
    expect(again).toEqual(first);
    expect(again).not.toBe(first);
  });

  it('rejects details it cannot open, every time', async () => {
    const d = newDecoder();
    const sealed: Payload = {
      metadata: { encoding: new TextEncoder().encode('binary/encrypted') },
      data: new Uint8Array([1, 2, 3]),
    };
    d.poll();
    await expect(d.decode('run/1', sealed)).rejects.toThrow();
    d.poll();
    await expect(d.decode('run/1', sealed)).rejects.toThrow();
  });

  it("opens details an encrypting worker sealed, through the client's codecs, once while they are unchanged", async () => {
    const d = newDecoder();
    const [sealed] = await codec.encode([described(window(5))]);
    expect(new TextDecoder().decode(sealed.metadata!.encoding!)).toBe('binary/encrypted');
    const again = () => ({ metadata: { ...sealed.metadata }, data: Uint8Array.from(sealed.data!) });
    d.poll();
    const first = await d.decode('run/1', again());
    expect(first).toEqual(window(5));
    d.poll();
    expect(await d.decode('run/1', again())).toBe(first);
  });
});
