/** A client connection that counts its RPCs by method (each attempt), for the bench's per-reader figures. */
import {
  Connection,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
  type ConnectionOptions,
} from '@temporalio/client';

type Interceptor = NonNullable<ConnectionOptions['interceptors']>[number];

/** A connection to `address` with the SDK's retries, and the count of its calls by method name. */
export async function countingConnection(
  address: string,
): Promise<{ connection: Connection; calls: Record<string, number> }> {
  const calls: Record<string, number> = {};
  const count: Interceptor = (options, next) => {
    const method = options.method_definition.path.split('/').pop() ?? '?';
    calls[method] = (calls[method] ?? 0) + 1;
    // grpc-js types an interceptor's result as its InterceptingCall class; the chain needs only the interface
    return next(options) as ReturnType<Interceptor>;
  };
  const connection = await Connection.connect({
    address,
    interceptors: [makeGrpcRetryInterceptor(defaultGrpcRetryOptions()), count],
  });
  return { connection, calls };
}
