/**
 * The reader of the fleet stream transport (docs/live-output.md#fleet-transport): blocks on the run's Redis stream
 * (`XREAD BLOCK`) for the model's deltas instead of polling Temporal, and reads the durable events from the workflow
 * (the `events` query) when a new model call starts — about one Temporal RPC per turn. While nothing comes (tools run,
 * the run waits or closed) it describes the run now and then, less and less often up to once a second, for its durable
 * events, its tools' updates and its end. Throws {@link StoreDownError} when the store fails; the transport
 * (client/fleet-stream/transport.ts) then goes on from {@link StoreReader.offset} on the heartbeat path.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type { StreamEvent } from '../../common/stream.js';
import { openBatch, parseStored, streamKey, type DeltaBatch } from '../../node-common/fleet-stream/entries.js';
import { HeartbeatDetailsDecoder } from '../heartbeat-details.js';
import { isUnreachable } from '../reconnect.js';
import type { StreamOptions } from '../run-stream.js';
import { describeRun } from '../run-stream/describe.js';
import { DurableRead } from '../run-stream/durable-read.js';
import { pendingOf, type Pending } from '../run-stream/pending.js';
import { eventsKey, openRelayEntry, type RelayEntry } from '../../node-common/fleet-stream/relay-entries.js';
import { StreamCursor } from './cursor.js';
import { RelayedEvents } from './relayed-events.js';

/** The store failed (a command failed or timed out): the reader goes on through the heartbeats. */
export class StoreDownError extends Error {
  override name = 'StoreDownError';
}

/** What one `describe` showed. */
interface Described {
  runId: string;
  /** `runId/historyLength`. */
  at: string;
  status: 'RUNNING' | 'CONTINUED_AS_NEW' | 'CLOSED';
  pending: Pending;
}

/** The first and the longest wait on the store before the run is described again. */
const IDLE_MS = 500;
const IDLE_MAX_MS = 1000;
/**
 * … when the run's durable events come through the store and neither a tool runs nor its agent loop ended: a describe
 * is then only for a model call whose deltas the store does not show (a worker that cannot reach it).
 */
const RELAYING_IDLE_MS = 3000;
/** How long the store is quiet between two model calls before the durable events are read without waiting for the next. */
const EVENTS_LAG_MS = 1000;
/**
 * Describes showing a model call that heartbeats deltas while the store shows none of them, after which the durable
 * events are read anyway (a worker that does not append: its calls' text then comes with their tails).
 */
const QUIET_CALL_DESCRIBES = 2;
/** Extra time a blocking read may take before the store counts as down. */
const BLOCK_SLACK_MS = 1000;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export class StoreReader {
  private readonly cursor: StreamCursor;
  private readonly key: string;
  /** The run's relayed events (node-common/fleet-stream/relay-entries.ts) and what was taken of them. */
  private readonly eventsKey: string;
  private readonly relay: RelayedEvents;
  /** The last entry id read from the store ('0': from the start of what it holds). */
  private lastId = '0';
  /** Runs of this reader's chain (their batches are taken), and runs of another execution of the workflow id. */
  private readonly runs = new Set<string>();
  private readonly foreign = new Set<string>();
  /** The history (`runId/historyLength`) whose durable events were all sent, and the run last read. */
  private readAt = '';
  private lastRun = '';
  private idle = IDLE_MS;
  /** Describes in a row that showed a model call streaming (heartbeats) while the store showed nothing of it. */
  private quietCalls = 0;
  /** When the last batch came. */
  private lastBatchAt = 0;
  private closedSince: number | undefined;
  private readonly details: HeartbeatDetailsDecoder;

  constructor(
    private readonly handle: WorkflowHandle,
    private readonly redis: Redis,
    private readonly opts: StreamOptions,
  ) {
    this.cursor = new StreamCursor(opts.from ?? 0);
    this.key = streamKey(handle.workflowId);
    this.eventsKey = eventsKey(handle.workflowId);
    this.relay = new RelayedEvents(this.cursor.seq);
    this.details = new HeartbeatDetailsDecoder(handle.client.options.loadedDataConverter);
  }

  /** The offset of the last event sent: where the heartbeat path goes on from. */
  get offset(): number {
    return this.cursor.offset;
  }

  /** The stream (see `streamRun`): ends when the run closed and its last events were sent, or `signal` aborts. */
  async *events(): AsyncGenerator<StreamEvent> {
    let seen = await this.describe();
    for (;;) {
      if (this.opts.signal?.aborted) return;
      if (seen) {
        if (seen.status === 'CONTINUED_AS_NEW') {
          await sleep(this.opts.pollMs ?? 25);
          seen = await this.describe();
          continue;
        }
        this.runs.add(seen.runId);
        const read = this.readDue(seen) ? yield* this.read(seen.runId, seen.at) : true;
        if (read) yield* this.cursor.toolUpdatesOf(seen.pending.tools);
        if (seen.status === 'CLOSED' && (this.readAt === seen.at || this.closedTimedOut())) return;
      }
      const { batches, relayed } = await this.block();
      if (batches.length === 0 && relayed.length === 0) {
        this.idle = this.relay.describeSoon() ? Math.min(this.idle * 2, IDLE_MAX_MS) : RELAYING_IDLE_MS;
        if (this.relay.gap(this.cursor.seq)) {
          seen = undefined;
          yield* this.fillGap();
        } else seen = await this.describe();
        continue;
      }
      this.idle = this.relay.describeSoon() ? IDLE_MS : RELAYING_IDLE_MS;
      this.quietCalls = 0;
      if (batches.length > 0) this.lastBatchAt = Date.now();
      this.relay.take(relayed, this.cursor.seq);
      for (const run of this.relay.runs()) if (!this.foreign.has(run)) this.runs.add(run);
      seen = batches.some((b) => !this.runs.has(b.runId) && !this.foreign.has(b.runId))
        ? await this.whose(batches)
        : undefined;
      for (const b of batches) if (this.runs.has(b.runId)) this.cursor.note(b);
      yield* this.sendRelayed();
      yield* this.fillGap();
      const run = this.cursor.unplaced();
      if (run && !seen) yield* this.read(run, '');
      yield* this.cursor.deltas();
    }
  }

  /** The relayed events held that come next, each after the calls that precede it are placed. */
  private *sendRelayed(): Generator<StreamEvent> {
    for (;;) {
      for (const c of this.relay.placedAt(this.cursor.seq)) this.cursor.place(c.runId, c.messageIndex);
      const e = this.relay.next(this.cursor.seq);
      if (!e) return;
      yield* this.cursor.durable([e]);
    }
  }

  /** Relayed events missing before some held: read from the workflow (once it answers with them), then the rest. */
  private async *fillGap(): AsyncGenerator<StreamEvent> {
    if (!this.relay.gap(this.cursor.seq)) return;
    yield* this.read(this.relay.lastRun || this.lastRun, '');
    yield* this.sendRelayed();
  }

  /**
   * Whether to read the durable events the history grew by: not while a model call is pending (its first batch asks
   * for them, one read instead of two) unless the store shows nothing of it, and between two calls only once the
   * store was quiet for {@link EVENTS_LAG_MS} (quick turns cost one read each); always once the run closed.
   */
  private readDue(seen: Described): boolean {
    if (seen.at === this.readAt) return false;
    if (seen.status === 'RUNNING' && this.relay.relaying && this.relay.gap(this.cursor.seq)) return true;
    if (seen.status === 'RUNNING' && this.relay.relaying) return this.silentCall(seen);
    if (seen.status !== 'RUNNING' || this.cursor.unplaced()) return true;
    if (!seen.pending.model) return Date.now() - this.lastBatchAt >= EVENTS_LAG_MS;
    return this.silentCall(seen);
  }

  /** A model call heartbeats deltas while the store shows none, describe after describe: its worker does not append. */
  private silentCall(seen: Described): boolean {
    return seen.pending.model?.deltas !== undefined && this.quietCalls++ >= QUIET_CALL_DESCRIBES;
  }

  /** Batches of runs not known yet: the run described now is this chain's (a continue-as-new), the others not. */
  private async whose(batches: DeltaBatch[]): Promise<Described | undefined> {
    const seen = await this.describe();
    if (!seen) return undefined;
    this.runs.add(seen.runId);
    for (const b of batches) if (!this.runs.has(b.runId)) this.foreign.add(b.runId);
    return seen;
  }

  /**
   * Reads the durable events after the last one sent, of run `runId` and the runs before it, and sends them (`at`: the
   * history they cover, '' when not known); places the call running now. False when the read failed (asked again).
   */
  private async *read(runId: string, at: string): AsyncGenerator<StreamEvent, boolean> {
    const count = { started: 0, finished: 0 };
    const read = new DurableRead(this.handle, runId, at, this.cursor.seq, count, runId === this.lastRun);
    await read.promise;
    if (!read.events) return false;
    this.lastRun = runId;
    this.readAt = at;
    yield* this.cursor.durable(read.events);
    this.relay.sent(this.cursor.seq);
    this.cursor.placeRunning(runId);
    yield* this.cursor.deltas();
    return true;
  }

  /** The batches and relayed entries appended since the last read of the store, waiting up to the idle pause for some. */
  private async block(): Promise<{ batches: DeltaBatch[]; relayed: RelayEntry[] }> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new StoreDownError('no answer')), this.idle + BLOCK_SLACK_MS);
    });
    let res;
    try {
      const keys = [this.key, this.eventsKey, this.lastId, this.relay.lastId];
      const read = this.redis.xread('COUNT', 1000, 'BLOCK', this.idle, 'STREAMS', ...keys);
      res = await Promise.race([read, late]);
    } catch (err) {
      throw err instanceof StoreDownError ? err : new StoreDownError('read failed', { cause: err });
    } finally {
      clearTimeout(timer);
    }
    const entriesOf = (key: string) => res?.find(([k]) => k === key)?.[1] ?? [];
    const [entries, relayedEntries] = [entriesOf(this.key), entriesOf(this.eventsKey)];
    if (entries.length > 0) this.lastId = entries.at(-1)![0];
    if (relayedEntries.length > 0) this.relay.lastId = relayedEntries.at(-1)![0];
    const codecs = this.handle.client.options.loadedDataConverter.payloadCodecs;
    const stored = entries.flatMap(([, fields]) => parseStored(fields) ?? []);
    const opened = await Promise.all(stored.map((s) => openBatch(s, codecs)));
    const relayed = await Promise.all(relayedEntries.map(([, fields]) => openRelayEntry(fields, codecs)));
    return { batches: opened.filter((b) => b !== undefined), relayed: relayed.filter((e) => e !== undefined) };
  }

  /** One describe of the run (undefined after a pause: Temporal unreachable). */
  private async describe(): Promise<Described | undefined> {
    const { describe } = this.opts;
    let desc;
    try {
      desc = await (describe ? describe(() => describeRun(this.handle)) : describeRun(this.handle));
    } catch (err) {
      if (describe || !isUnreachable(err)) throw err;
      await sleep(250);
      return undefined;
    }
    if (desc.status === 'CLOSED') this.closedSince ??= Date.now();
    const pending = desc.status === 'RUNNING' ? await pendingOf(desc.runId, desc.raw, this.details) : { tools: [] };
    return { runId: desc.runId, at: `${desc.runId}/${desc.historyLength}`, status: desc.status, pending };
  }

  /** The run closed and no worker answered the read for `closedReadTimeoutMs`: end without its last events. */
  private closedTimedOut(): boolean {
    const timeout = this.opts.closedReadTimeoutMs ?? Infinity;
    return Date.now() - (this.closedSince ?? Date.now()) >= timeout;
  }
}
