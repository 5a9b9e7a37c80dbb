/**
 * The fleet stream transport on the client (docs/live-output.md#fleet-transport): a run's stream read from the store
 * (client/fleet-stream/store-reader.ts) while it answers, else through the heartbeats (the default reader,
 * client/run-stream/reader.ts) from the last offset sent, moving back to the store once it answers a `PING` again.
 * Offsets are the same on both paths, so the consumer sees one stream.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type { StreamEvent } from '../../common/stream.js';
import type { FleetStreamOption } from '../../node-common/fleet-stream/config.js';
import { connectStore, STORE_COMMAND_TIMEOUT_MS } from '../../node-common/fleet-stream/connection.js';
import type { StreamOptions } from '../run-stream.js';
import { RunStreamReader } from '../run-stream/reader.js';
import { StoreDownError, StoreReader } from './store-reader.js';

/** How often the store is asked whether it is back while the heartbeat path reads. */
const RETRY_MS = 250;

/** The stream of `handle`'s run on the fleet transport of `option` (see `streamRun`). */
export async function* fleetStream(
  handle: WorkflowHandle,
  option: FleetStreamOption,
  opts: StreamOptions,
): AsyncGenerator<StreamEvent> {
  const redis = connectStore(option.redis, true);
  let from = opts.from ?? 0;
  try {
    let up = await answers(redis);
    for (;;) {
      if (opts.signal?.aborted) return;
      const path = up ? fromStore(handle, redis, { ...opts, from }) : fromHeartbeats(handle, redis, { ...opts, from });
      opts.onTransport?.(up ? 'store' : 'heartbeat');
      let result = await path.next();
      for (; !result.done; result = await path.next()) {
        from = Math.max(from, result.value.offset ?? from);
        yield result.value;
      }
      if (result.value === 'ended') return;
      up = result.value === 'store back';
    }
  } finally {
    redis.disconnect();
  }
}

/** The store path until the run's stream ends, or the store fails (then 'store down'). */
async function* fromStore(
  handle: WorkflowHandle,
  redis: Redis,
  opts: StreamOptions,
): AsyncGenerator<StreamEvent, 'ended' | 'store down'> {
  try {
    yield* new StoreReader(handle, redis, opts).events();
    return 'ended';
  } catch (err) {
    if (err instanceof StoreDownError) return 'store down';
    throw err;
  }
}

/** The heartbeat path until the run's stream ends, or the store answers again (then 'store back'). */
async function* fromHeartbeats(
  handle: WorkflowHandle,
  redis: Redis,
  opts: StreamOptions,
): AsyncGenerator<StreamEvent, 'ended' | 'store back'> {
  const back = new AbortController();
  const stop = () => back.abort();
  opts.signal?.addEventListener('abort', stop, { once: true });
  let asking = false;
  const timer = setInterval(() => {
    if (asking) return;
    asking = true;
    void answers(redis).then((yes) => {
      asking = false;
      if (yes) back.abort();
    });
  }, RETRY_MS);
  try {
    yield* new RunStreamReader(handle, { ...opts, signal: back.signal }).events();
    return back.signal.aborted && !opts.signal?.aborted ? 'store back' : 'ended';
  } finally {
    clearInterval(timer);
    opts.signal?.removeEventListener('abort', stop);
  }
}

/** Whether the store answers a `PING` in time (connecting first when it is not connected). */
async function answers(redis: Redis): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<boolean>(
    // after the I/O ready by then (a busy event loop that runs this late has not read the answer waiting yet)
    (resolve) => (timer = setTimeout(() => setImmediate(() => resolve(false)), STORE_COMMAND_TIMEOUT_MS * 4)),
  );
  const ping = (async () => {
    if (redis.status === 'wait') await redis.connect();
    if (redis.status !== 'ready') return false;
    return (await redis.ping()) === 'PONG';
  })().catch(() => false);
  try {
    return await Promise.race([ping, late]);
  } finally {
    clearTimeout(timer);
  }
}
