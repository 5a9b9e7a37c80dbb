/**
 * Client-side gRPC interceptors: the Temporal client's own retry interceptor, then a guard under it for a closed
 * channel.
 *
 * Why the guard: `@temporalio/client`'s retry interceptor (`makeGrpcRetryInterceptor`, 1.13) retries a failed call from
 * a `setTimeout`; when the connection is closed while a retry waits (an `AgentClient` closed while a `stream()` or
 * `result()` call is backing off from an UNAVAILABLE), the timer's new call throws "Channel has been shut down" out of
 * the timer — an uncaught exception that ends the caller's process. Under the retry interceptor, the guard turns that
 * throw into the call's failure (status CANCELLED, not retried), so the pending call rejects like any other and
 * nothing escapes.
 */
import { InterceptingCall, Metadata, status as GrpcStatus, type Interceptor, type NextCall } from '@grpc/grpc-js';
import { defaultGrpcRetryOptions, makeGrpcRetryInterceptor } from '@temporalio/client';

/** The interceptors Keel's client connections use (`Connection.connect({ interceptors })`); must not throw. */
export function clientInterceptors(): Interceptor[] {
  return [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), closedChannelGuard];
}

/** A call on a closed channel fails with CANCELLED (the retry interceptor does not retry it) instead of throwing. */
export const closedChannelGuard: Interceptor = (options, nextCall) => {
  try {
    return new InterceptingCall(nextCall(options));
  } catch (err) {
    return new InterceptingCall(failedCall(err instanceof Error ? err.message : String(err)));
  }
};

type Call = ReturnType<NextCall>;

/** A call that never reaches the network: started, it reports `details` with status CANCELLED on the next tick. */
function failedCall(details: string): Call {
  const noop = (): void => {};
  return {
    start(_metadata: Metadata, listener?: Parameters<Call['start']>[1]) {
      process.nextTick(() =>
        listener?.onReceiveStatus?.({ code: GrpcStatus.CANCELLED, details, metadata: new Metadata() }),
      );
    },
    cancelWithStatus: noop,
    getPeer: () => '',
    getAuthContext: () => null,
    sendMessageWithContext: noop,
    sendMessage: noop,
    startRead: noop,
    halfClose: noop,
  };
}
