/**
 * The worker's side of the fleet stream transport (docs/live-output.md#fleet-transport): appends a model call's delta
 * batches to its run's Redis stream, best-effort — an append that fails or takes longer than
 * {@link STORE_COMMAND_TIMEOUT_MS} is dropped (readers then wait for the call's tail, or have fallen back to the
 * heartbeats), so a run never fails because its stream store did.
 */
import type { Redis } from 'ioredis';
import { batchEnd, batchFields, parseBatch, streamKey, type DeltaBatch } from './entries.js';
import type { FleetStreamOption } from './config.js';
import { connectStore, STORE_COMMAND_TIMEOUT_MS } from './connection.js';

export class FleetStreamStore {
  private readonly redis: Redis;
  private readonly maxLen: number;
  private readonly ttlSeconds: number;
  /** Appends that failed (the store away or slow), for tests and operators. */
  failed = 0;

  constructor(option: FleetStreamOption) {
    this.redis = connectStore(option.redis);
    this.maxLen = option.maxLen ?? 10_000;
    this.ttlSeconds = option.ttlSeconds ?? 3600;
  }

  /** Appends `batch` to workflow `workflowId`'s stream (bounded, its expiry renewed); never throws. */
  append(workflowId: string, batch: DeltaBatch): Promise<void> {
    const key = streamKey(workflowId);
    return this.redis
      .pipeline()
      .xadd(key, 'MAXLEN', '~', String(this.maxLen), '*', ...batchFields(batch))
      .expire(key, this.ttlSeconds)
      .exec()
      .then(
        (res) => {
          if (res?.some(([err]) => err)) this.failed += 1;
        },
        () => {
          this.failed += 1;
        },
      );
  }

  /**
   * The last delta number the store holds of call (`runId`, `messageIndex`), 0 when none or the store is away: a
   * retried attempt numbers on from past it, so no number is given twice.
   */
  async lastNumber(workflowId: string, runId: string, messageIndex: number): Promise<number> {
    try {
      const last = await withTimeout(this.redis.xrevrange(streamKey(workflowId), '+', '-', 'COUNT', 1));
      const batch = last?.[0] && parseBatch(last[0][1]);
      return batch && batch.runId === runId && batch.messageIndex === messageIndex ? batchEnd(batch) : 0;
    } catch {
      return 0;
    }
  }

  /** Connects (the worker starts); appends before that, or while the server is away, are dropped. */
  open(): void {
    this.redis.connect().catch(() => {});
  }

  /** Closes the connection (the worker stops). */
  close(): void {
    this.redis.disconnect();
  }
}

/** `p`, or undefined after {@link STORE_COMMAND_TIMEOUT_MS}. */
function withTimeout<T>(p: Promise<T>): Promise<T | undefined> {
  let t: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>(
    (resolve) => (t = setTimeout(() => resolve(undefined), STORE_COMMAND_TIMEOUT_MS)),
  );
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}
