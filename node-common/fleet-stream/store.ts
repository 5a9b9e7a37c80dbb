/**
 * The worker's side of the fleet stream transport (docs/live-output.md#fleet-transport): appends a model call's delta
 * batches to its run's Redis stream, best-effort — an append that fails or takes longer than a second is dropped (readers then wait for the call's tail, or have fallen back to the
 * heartbeats), so a run never fails because its stream store did.
 */
import type { Redis } from 'ioredis';
import type { PayloadCodec } from '@temporalio/common';
import { batchEnd, batchFields, closeFields, parseStored, streamKey, toolFields, type DeltaBatch } from './entries.js';
import { redactedUrl, type FleetStreamOption } from './config.js';
import type { LoggedEvent, ToolHeartbeat } from '../../common/events.js';
import type { RelayedCall, RelayedClose } from '../../common/stream-relay.js';
import { callEntry, eventEntry, eventsKey } from './relay-entries.js';
import { connectStore } from './connection.js';

export class FleetStreamStore {
  private readonly redis: Redis;
  private readonly maxLen: number;
  private readonly ttlSeconds: number;
  /** Appends that failed (the store away or slow), for tests and operators. */
  failed = 0;
  /**
   * Settles once the first connection succeeded or failed (at most {@link LOOKUP_TIMEOUT_MS} after `open()`): a
   * worker's first calls wait for it instead of losing their first batches; after that a store away fails at once.
   */
  private connected: Promise<void> = Promise.resolve();
  /** The last relayed entries' append, the next one's (not started: entries relayed now join it) and its entries. */
  private relaying: Promise<void> = Promise.resolve();
  private nextRelay: Promise<void> | undefined;
  private readonly relayQueue: Relayed[] = [];
  /** An append failed and none succeeded since. */
  private down = false;
  private readonly url: string;

  /** `codecs`: the worker's payload codecs, once known (an encrypting worker's seal the batches). */
  constructor(
    option: FleetStreamOption,
    private readonly codecs: () => readonly PayloadCodec[] = () => [],
  ) {
    this.url = option.redis;
    this.redis = connectStore(option.redis);
    this.maxLen = option.maxLen ?? 10_000;
    this.ttlSeconds = option.ttlSeconds ?? 3600;
  }

  /** Appends `batch` to workflow `workflowId`'s stream (bounded, its expiry renewed); never throws. */
  async append(workflowId: string, batch: DeltaBatch): Promise<void> {
    const key = streamKey(workflowId);
    try {
      await this.connected;
      const fields = await batchFields(batch, this.codecs());
      const res = await this.redis
        .pipeline()
        .xadd(key, 'MAXLEN', '~', String(this.maxLen), '*', ...fields)
        .expire(key, this.ttlSeconds)
        .exec();
      if (res?.some(([err]) => err)) this.fail();
      else this.down = false;
    } catch {
      this.fail();
    }
  }

  /** Relays durable event `e` of run `runId` (common/stream-relay.ts); event 1 starts a new chain of runs. */
  relayEvent(workflowId: string, runId: string, e: LoggedEvent): Promise<void> {
    return this.relay(workflowId, () => eventEntry(runId, e, this.codecs()), e.seq === 1);
  }

  /** Relays that run `runId` schedules model call `c`. */
  relayCall(workflowId: string, runId: string, c: RelayedCall): Promise<void> {
    return this.relay(workflowId, () => callEntry(runId, c));
  }

  /**
   * Relays that run `runId`'s execution ends (`c`): an entry of the run's delta stream (entries.ts), appended after
   * every event relayed before it; a repeated one (the last workflow task run again) is one more, which readers ignore.
   */
  relayClose(workflowId: string, runId: string, c: RelayedClose): Promise<void> {
    return this.relay(workflowId, () => ['*', ...closeFields(runId, c)], false, streamKey(workflowId));
  }

  /** Appends a running tool's latest update `t` of run `runId` to workflow `workflowId`'s stream; never throws. */
  async appendTool(workflowId: string, runId: string, t: ToolHeartbeat): Promise<void> {
    const key = streamKey(workflowId);
    try {
      await this.connected;
      const fields = await toolFields(runId, t, this.codecs());
      const pipeline = this.redis.pipeline().xadd(key, 'MAXLEN', '~', String(this.maxLen), '*', ...fields);
      const res = await pipeline.expire(key, this.ttlSeconds).exec();
      if (res?.some(([err]) => err)) this.fail();
      else this.down = false;
    } catch {
      this.fail();
    }
  }

  /**
   * Appends a relayed durable event or model call (relay-entries.ts: `entry` is its id and fields) to workflow
   * `workflowId`'s events stream after every one relayed before it; never throws. Those relayed together (one workflow
   * activation's) go in one round trip. An entry already there (a workflow task run again) is left as it is. `fresh`: the
   * first event of a new chain of runs — what an earlier execution of the workflow id left there goes first.
   */
  private relay(
    workflowId: string,
    entry: () => Promise<string[]> | string[],
    fresh = false,
    key = eventsKey(workflowId),
  ): Promise<void> {
    this.relayQueue.push({ key, entry, fresh });
    if (!this.nextRelay) {
      this.nextRelay = this.relaying.then(() => {
        this.nextRelay = undefined;
        return this.appendRelayed(this.relayQueue.splice(0));
      });
      this.relaying = this.nextRelay;
    }
    return this.nextRelay;
  }

  private async appendRelayed(items: Relayed[]): Promise<void> {
    try {
      await this.connected;
      const entries = await Promise.all(items.map((i) => i.entry()));
      const pipeline = this.redis.pipeline();
      items.forEach(({ key, fresh }, i) => {
        const [id, ...fields] = entries[i];
        if (fresh) pipeline.del(key);
        pipeline.xadd(key, 'MAXLEN', '~', String(this.maxLen), id, ...fields);
      });
      for (const key of new Set(items.map((i) => i.key))) pipeline.expire(key, this.ttlSeconds);
      const res = await pipeline.exec();
      if (res?.some(([err]) => err && !isDuplicate(err))) this.fail();
      else this.down = false;
    } catch {
      this.fail();
    }
  }

  /** Counts a failed append; the first of an outage is said once on stderr (the URL without its password). */
  private fail(): void {
    this.failed += 1;
    if (this.down) return;
    this.down = true;
    process.stderr.write(
      `[keel] the stream store ${redactedUrl(this.url)} does not answer: live output goes through the heartbeats until it does\n`,
    );
  }

  /**
   * The last delta number the store holds of call (`runId`, `messageIndex`), 0 when none; undefined when the store
   * does not answer within {@link LOOKUP_TIMEOUT_MS}: a retried attempt numbers on from past it, so no number is given
   * twice, and when it cannot know, appends nothing (its text then reaches store readers with the call's tail).
   */
  async lastNumber(workflowId: string, runId: string, messageIndex: number): Promise<number | undefined> {
    try {
      // the last batch among the last entries (a tool update or a close may follow it)
      const last = await withTimeout(
        this.connected.then(() => this.redis.xrevrange(streamKey(workflowId), '+', '-', 'COUNT', LOOKBACK)),
      );
      if (last === undefined) return undefined;
      const batch = last.map(([, fields]) => parseStored(fields)).find((b) => b !== undefined);
      return batch && batch.runId === runId && batch.messageIndex === messageIndex ? batchEnd(batch) : 0;
    } catch {
      return undefined;
    }
  }

  /** Connects (the worker starts); appends before that, or while the server is away, are dropped. */
  open(): void {
    this.connected = Promise.race([
      this.redis.connect().catch(() => {}),
      new Promise<void>((resolve) => setTimeout(resolve, LOOKUP_TIMEOUT_MS).unref()),
    ]);
  }

  /** Closes the connection (the worker stops). */
  close(): void {
    this.redis.disconnect();
  }
}

/** A relayed entry waiting for its append. */
interface Relayed {
  key: string;
  entry: () => Promise<string[]> | string[];
  fresh: boolean;
}

/** Whether `err` is Redis refusing an entry id not above the stream's last: the entry was appended before. */
const isDuplicate = (err: Error): boolean => /equal or smaller than the target stream top item/.test(err.message);

/** The entries a retried attempt looks back through for the last batch. */
const LOOKBACK = 16;

/** The longest a retried attempt waits to learn where the store's numbering of its call ended. */
const LOOKUP_TIMEOUT_MS = 1000;

/** `p`, or undefined after {@link LOOKUP_TIMEOUT_MS}. */
function withTimeout<T>(p: Promise<T>): Promise<T | undefined> {
  let t: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<undefined>((resolve) => (t = setTimeout(() => resolve(undefined), LOOKUP_TIMEOUT_MS)));
  return Promise.race([p, timeout]).finally(() => clearTimeout(t));
}
