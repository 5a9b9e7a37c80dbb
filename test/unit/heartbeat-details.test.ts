/**
 * client/heartbeat-details.ts: a stream reader's poll that finds an activity's heartbeat details unchanged reuses their
 * last decode instead of parsing the model call's delta window again; changed details, another activity, other
 * metadata or a forgotten key are decoded afresh, and a payload that is not JSON still throws.
 */
import { defaultPayloadConverter, type Payload } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { HeartbeatDetailsDecoder } from '../../client/heartbeat-details.js';

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
  it('returns the same value, not parsed again, while the details are unchanged', () => {
    const d = new HeartbeatDetailsDecoder();
    d.poll();
    const first = d.decode('run/1', described(window(300)));
    expect(first).toEqual(window(300));
    d.poll();
    expect(d.decode('run/1', described(window(300)))).toBe(first);
    d.poll();
    expect(d.decode('run/1', described(window(300)))).toBe(first);
  });

  it('decodes changed details, another activity and other metadata afresh', () => {
    const d = new HeartbeatDetailsDecoder();
    d.poll();
    const first = d.decode('run/1', described(window(3)));
    d.poll();
    const grown = d.decode('run/1', described(window(4)));
    expect(grown).toEqual(window(4));
    expect(d.decode('run/2', described(window(4)))).not.toBe(grown);
    d.poll();
    const raw = described(window(4));
    expect(() =>
      d.decode('run/1', { ...raw, metadata: { encoding: new TextEncoder().encode('binary/encrypted') } }),
    ).toThrow();
    expect(first).toEqual(window(3));
  });

  it('forgets an activity that a poll did not see', () => {
    const d = new HeartbeatDetailsDecoder();
    d.poll();
    const first = d.decode('run/1', described(window(2)));
    d.poll();
    d.poll();
    const again = d.decode('run/1', described(window(2)));
    expect(again).toEqual(first);
    expect(again).not.toBe(first);
  });

  it('throws on details that are not JSON, every time', () => {
    const d = new HeartbeatDetailsDecoder();
    const sealed: Payload = {
      metadata: { encoding: new TextEncoder().encode('binary/encrypted') },
      data: new Uint8Array([1, 2, 3]),
    };
    d.poll();
    expect(() => d.decode('run/1', sealed)).toThrow();
    d.poll();
    expect(() => d.decode('run/1', sealed)).toThrow();
  });
});
