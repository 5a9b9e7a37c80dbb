import { InterceptingCall, type Interceptor } from '@grpc/grpc-js';
import { Connection } from '@temporalio/client';
import { afterEach, describe, expect, it } from 'vitest';
import { clientInterceptors } from '../../node-common/closed-channel-guard.js';

// A connection to a port nothing listens on: every call fails UNAVAILABLE, which the Temporal client's retry
// interceptor retries after a backoff (a setTimeout); the connection is closed while that retry waits.
const NOWHERE = '127.0.0.1:1';

describe('a client connection closed while a call waits to be retried', () => {
  const uncaught: Error[] = [];
  const onUncaught = (err: Error): void => void uncaught.push(err);
  afterEach(() => void process.off('uncaughtException', onUncaught));

  it("the waiting call rejects with CANCELLED 'Channel has been shut down'; nothing escapes as an uncaught exception", async () => {
    process.on('uncaughtException', onUncaught);
    let firstFailure!: (code: number) => void;
    const failed = new Promise<number>((resolve) => (firstFailure = resolve));
    // under Keel's interceptors: sees each attempt's status (the gate: the first attempt has failed)
    const observer: Interceptor = (options, nextCall) =>
      new InterceptingCall(nextCall(options), {
        start: (metadata, listener, next) =>
          next(metadata, { onReceiveStatus: (status, nextStatus) => (firstFailure(status.code), nextStatus(status)) }),
      });
    const connection = Connection.lazy({ address: NOWHERE, interceptors: [...clientInterceptors(), observer] });
    const call = connection.workflowService.getSystemInfo({});
    const settled = call.then(
      () => 'resolved',
      (err: Error & { code?: number }) => `rejected: ${err.code} ${err.message}`,
    );
    // the first attempt fails at once (14 UNAVAILABLE: connection refused); its retry waits ≥ 80 ms (defaultGrpcRetryOptions)
    expect(await failed).toBe(14);
    await connection.close();
    expect(await settled).toBe('rejected: 1 1 CANCELLED: Channel has been shut down');
    expect(uncaught).toEqual([]);
  });
});
