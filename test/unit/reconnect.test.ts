/** client/reconnect.ts: which errors mean "Temporal unreachable", and retrying through them. */
import { describe, expect, it } from 'vitest';
import { isUnreachable, throughOutage } from '../../client/reconnect.js';

const grpcError = (code: number) => Object.assign(new Error(`${code} grpc`), { code, details: '', metadata: {} });
const serviceError = (cause: unknown) => Object.assign(new Error('service'), { name: 'ServiceError', cause });

describe('reconnect', () => {
  it('UNAVAILABLE and DEADLINE_EXCEEDED, direct or as a ServiceError cause, are an outage; others are not', () => {
    expect(isUnreachable(grpcError(14))).toBe(true);
    expect(isUnreachable(grpcError(4))).toBe(true);
    expect(isUnreachable(serviceError(grpcError(14)))).toBe(true);
    expect(isUnreachable(grpcError(5))).toBe(false);
    expect(isUnreachable(new Error('boom'))).toBe(false);
  });

  it('retries through an outage, saying so once, then reports the reconnection', async () => {
    const said: string[] = [];
    let calls = 0;
    const value = await throughOutage(
      async () => {
        calls += 1;
        if (calls < 3) throw grpcError(14);
        return 'ok';
      },
      { say: (l) => said.push(l) },
    );
    expect(value).toBe('ok');
    expect(calls).toBe(3);
    expect(said).toHaveLength(2);
    expect(said[0]).toMatch(/^keel: Temporal unreachable \(14 grpc\); reconnecting…$/);
    expect(said[1]).toMatch(/^keel: reconnected after \d+ s$/);
  });

  it('rethrows other errors at once, and an outage longer than maxOutageMs', async () => {
    await expect(throughOutage(async () => Promise.reject(grpcError(5)), { say: () => {} })).rejects.toThrow('5 grpc');
    await expect(
      throughOutage(async () => Promise.reject(grpcError(14)), { say: () => {}, maxOutageMs: 300 }),
    ).rejects.toThrow('14 grpc');
  });
});
