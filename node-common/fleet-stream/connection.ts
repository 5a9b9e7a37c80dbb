/**
 * A connection to the fleet stream transport's Redis (ioredis, an optional peer dependency): one that never queues a
 * command while the server is away (it fails at once, and the caller falls back), with a short command timeout, and
 * that reconnects by itself. Its errors are the caller's to handle; ioredis's own "Unhandled error event" lines are
 * silenced (they name the host, and a run must not be noisy because its stream store is down).
 */
import type * as ioredis from 'ioredis';
import type { Redis, RedisOptions } from 'ioredis';
import { requireOptional } from '../optional-packages.js';

/** The pause between two attempts to reconnect to a server that went away. */
const RECONNECT_MS = 250;

/** The time unit of a reader asking whether the store is back (its PING may take four of them). */
export const STORE_COMMAND_TIMEOUT_MS = 250;
/** The longest an append may take before it counts as failed (never waited for: a busy worker must not drop them). */
const APPEND_TIMEOUT_MS = 1000;

/**
 * A connection to `url`, opened by `connect()` (then retried every {@link RECONNECT_MS} ms while the server is away).
 * `blocking`: for a reader's `XREAD BLOCK` (no command timeout: the block is bounded by the reader).
 */
export function connectStore(url: string, blocking = false): Redis {
  // named for `CLIENT LIST`: a worker's appender or a reader
  const { Redis: RedisClass } = requireOptional<typeof ioredis>('ioredis');
  const options: RedisOptions = {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 1000,
    retryStrategy: () => RECONNECT_MS,
    lazyConnect: true,
    connectionName: blocking ? 'keel-stream-reader' : 'keel-stream-worker',
    ...(blocking ? {} : { commandTimeout: APPEND_TIMEOUT_MS }),
  };
  const redis = new RedisClass(url, options);
  redis.on('error', () => {});
  return redis;
}

/** Whether `redis` is connected and ready for commands. */
export const storeReady = (redis: Redis): boolean => redis.status === 'ready';
