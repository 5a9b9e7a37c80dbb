/**
 * The reader of the fleet stream transport (docs/live-output.md#fleet-transport): blocks on the run's Redis streams
 * (`XREAD BLOCK`) for the model's deltas, the durable events, the tools' updates and the run's close the workflow and
 * its activities relay there, instead of polling Temporal. It asks Temporal (counted by cause in
 * {@link temporalAsks}) at its start (a `describe`, and an `events` read when the store holds nothing of the run yet),
 * for events missing from the store, at its end only when no close was relayed, and now and then while the store is
 * quiet (every 10 s; more often against workers before 0.11.0, which relay neither tool updates nor the close, and
 * before 0.10.0, which relay no events). Throws {@link StoreDownError} when the store fails; the transport
 * (client/fleet-stream/transport.ts) then goes on from {@link StoreReader.offset} on the heartbeat path.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { Redis } from 'ioredis';
import type { StreamEvent } from '../../common/stream.js';
import {
  openBatch,
  openTool,
  parseSide,
  parseStored,
  streamKey,
  type DeltaBatch,
  type SideEntry,
} from '../../node-common/fleet-stream/entries.js';
import type { ToolHeartbeat } from '../../common/events.js';
import { HeartbeatDetailsDecoder } from '../heartbeat-details.js';
import { isUnreachable } from '../reconnect.js';
import type { StreamOptions } from '../run-stream.js';
import { describeRun } from '../run-stream/describe.js';
import { DurableRead } from '../run-stream/durable-read.js';
import { pendingOf, type Pending } from '../run-stream/pending.js';
import {
  eventsKey,
  openRelayEntry,
  relaysCloses,
  type RelayEntry,
} from '../../node-common/fleet-stream/relay-entries.js';
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
  historyLength: number;
  status: 'RUNNING' | 'CONTINUED_AS_NEW' | 'CLOSED';
  pending: Pending;
}

/** What one read of the store gave. */
interface StoreRead {
  batches: DeltaBatch[];
  relayed: RelayEntry[];
  side: SideEntry[];
  /** The relayed entries' worker relays its run's close and tool updates too. */
  closes: boolean;
}

/** The first and the longest wait on the store before the run is described again. */
const IDLE_MS = 500;
const IDLE_MAX_MS = 1000;
/**
 * … when the run's durable events come through the store and neither a tool runs nor its agent loop ended: a describe
 * is then only for a model call whose deltas the store does not show (a worker that cannot reach it).
 */
const RELAYING_IDLE_MS = 3000;
/**
 * … when its worker relays its close and tool updates too (0.11.0): a describe is then only for a run that closed
 * without its worker knowing (terminated, timed out).
 */
const CLOSES_IDLE_MS = 10_000;
/** How long the store is quiet between two model calls before the durable events are read without waiting for the next. */
const EVENTS_LAG_MS = 1000;
/**
 * Describes showing a model call that heartbeats deltas while the store shows none of them, after which the durable
 * events are read anyway (a worker that does not append: its calls' text then comes with their tails).
 */
const QUIET_CALL_DESCRIBES = 2;
/** A history this long holds no completed workflow task (started, task scheduled, task started). */
const FIRST_TASK_EVENTS = 3;
/** Extra time a blocking read may take before the store counts as down. */
const BLOCK_SLACK_MS = 1000;
/**
 * While entries keep coming, the next read waits until this long after the last one: a reader wakes at most every
 * 35 ms instead of once per delta batch (its CPU is mostly the read's two system calls), for at most 35 ms of latency.
 */
const GATHER_MS = 35;

/** Why fleet readers in this process asked Temporal, by cause (`describe:<why>`, `read:<why>`): for the bench. */
export const temporalAsks: Record<string, number> = {};
const ask = (cause: string): void => void (temporalAsks[cause] = (temporalAsks[cause] ?? 0) + 1);

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
  /** When the last read that gave entries ended (GATHER_MS). */
  private lastReadAt = 0;
  private closedSince: number | undefined;
  private readonly details: HeartbeatDetailsDecoder;
  /** Whether the store was read once (the first read comes before the workflow is asked for anything but a describe). */
  private looked = false;
  /** Since when the reader waits for the store (its start, or the last describe that showed no task completed). */
  private since = Date.now();
  private storeSeen = false;
  /** The close the store relayed of this reader's run (its last run): every event up to `lastSeq` ends the stream. */
  private closed: { runId: string; lastSeq: number } | undefined;
  /** The latest update of each tool call the store relayed, not sent yet (its tool's start not sent yet). */
  private readonly tools = new Map<string, ToolHeartbeat>();

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
    let seen = await this.describe('start');
    for (;;) {
      if (this.opts.signal?.aborted) return;
      if (seen) {
        if (seen.status === 'CONTINUED_AS_NEW') {
          await sleep(this.opts.pollMs ?? 25);
          seen = await this.describe('continued as new');
          continue;
        }
        this.runs.add(seen.runId);
        // the store is looked at first: what it relays is not asked of the workflow
        const due = this.looked && this.readDue(seen);
        const read = due ? yield* this.read(seen.runId, seen.at, due) : true;
        if (read) yield* this.cursor.toolUpdatesOf(seen.pending.tools);
        if (seen.status === 'CLOSED' && (this.readAt === seen.at || this.closedTimedOut())) return;
      }
      if (this.closedHere()) return;
      const first = !this.looked;
      const gathered = this.lastReadAt + GATHER_MS - Date.now();
      if (gathered > 0) await sleep(gathered);
      const got = await this.block(first && seen?.status === 'CLOSED');
      this.looked = true;
      if (got.batches.length === 0 && got.relayed.length === 0 && got.side.length === 0) {
        if (first && seen?.status === 'CLOSED') continue; // nothing relayed: read the closed run's events
        if (this.waitsForStore()) {
          seen = undefined; // a run just started: its first events are on their way to the store
          continue;
        }
        const soon = this.relay.describeSoon();
        this.idle = soon ? Math.min(this.idle * 2, IDLE_MAX_MS) : this.quietIdle();
        if (this.missing()) {
          seen = undefined;
          yield* this.fillGap();
        } else seen = await this.describe(soon ?? 'store quiet');
        continue;
      }
      seen = yield* this.took(got);
    }
  }

  /** Sends what one read of the store gave; what a describe it needed showed (batches of a run not known yet). */
  private async *took({
    batches,
    relayed,
    side,
    closes,
  }: StoreRead): AsyncGenerator<StreamEvent, Described | undefined> {
    this.storeSeen = true;
    this.lastReadAt = Date.now();
    this.idle = this.relay.describeSoon() ? IDLE_MS : this.quietIdle();
    this.quietCalls = 0;
    if (batches.length > 0) this.lastBatchAt = Date.now();
    this.relay.take(relayed, this.cursor.seq, closes);
    for (const run of this.relay.runs()) if (!this.foreign.has(run)) this.runs.add(run);
    const seen = batches.some((b) => !this.runs.has(b.runId) && !this.foreign.has(b.runId))
      ? await this.whose(batches)
      : undefined;
    for (const b of batches) if (this.runs.has(b.runId)) this.cursor.note(b);
    await this.noteSide(side);
    yield* this.sendRelayed();
    yield* this.fillGap();
    const run = this.cursor.unplaced();
    if (run && !seen) yield* this.read(run, '', 'call not placed');
    yield* this.cursor.deltas();
    yield* this.relayedToolUpdates();
    return seen;
  }

  /**
   * Whether to go on waiting for the store without asking Temporal: it gave nothing yet, for less than
   * {@link RELAYING_IDLE_MS} (a run started a moment ago relays its first events once its first workflow task
   * completed, which takes seconds on a loaded fleet: each describe that shows none completed yet waits as long
   * again; a worker that relays nothing is found out after that).
   */
  private waitsForStore(): boolean {
    return !this.storeSeen && Date.now() - this.since < RELAYING_IDLE_MS;
  }

  /** The wait on a quiet store before a describe when the events come through it. */
  private quietIdle(): number {
    return this.relay.closes ? CLOSES_IDLE_MS : RELAYING_IDLE_MS;
  }

  /** Keeps the tool updates and the close of this reader's runs. */
  private async noteSide(side: SideEntry[]): Promise<void> {
    const codecs = this.handle.client.options.loadedDataConverter.payloadCodecs;
    for (const e of side) {
      if (!this.runs.has(e.runId)) continue;
      if (e.kind === 'close') {
        if (e.ended !== 'continuedAsNew') this.closed = { runId: e.runId, lastSeq: e.lastSeq };
        continue;
      }
      const t = await openTool(e.fields, codecs);
      if (t) this.tools.set(t.toolCallId, t);
    }
  }

  /** The tool updates the store relayed, each once its tool's start was sent (dropped once its end was). */
  private *relayedToolUpdates(): Generator<StreamEvent> {
    for (const [id, t] of this.tools) {
      const running = this.cursor.toolRunning(id);
      if (running === undefined) continue;
      this.tools.delete(id);
      if (running) yield* this.cursor.toolUpdatesOf([t]);
    }
  }

  /** The run's close was relayed and every event before it was sent: the stream ends without asking Temporal. */
  private closedHere(): boolean {
    return this.closed !== undefined && this.cursor.seq >= this.closed.lastSeq;
  }

  /** Whether relayed events are missing: a later one, a call after one, or the close after one, came first. */
  private missing(): boolean {
    return this.relay.gap(this.cursor.seq) || (this.closed !== undefined && !this.closedHere());
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
    if (!this.missing()) return;
    const run = this.relay.gap(this.cursor.seq) ? this.relay.lastRun || this.lastRun : this.closed!.runId;
    yield* this.read(run, '', 'gap');
    yield* this.sendRelayed();
  }

  /**
   * Whether to read the durable events the history grew by: not while a model call is pending (its first batch asks
   * for them, one read instead of two) unless the store shows nothing of it, and between two calls only once the
   * store was quiet for {@link EVENTS_LAG_MS} (quick turns cost one read each); always once the run closed. The
   * answer is the cause (counted in {@link temporalAsks}), false: not due.
   */
  private readDue(seen: Described): string | false {
    if (seen.at === this.readAt) return false;
    if (seen.status === 'RUNNING' && this.relay.relaying && this.relay.gap(this.cursor.seq)) return 'gap';
    if (seen.status === 'RUNNING' && this.relay.relaying) return this.silentCall(seen) && 'call not in store';
    if (seen.status !== 'RUNNING') return 'run closed';
    if (seen.historyLength <= FIRST_TASK_EVENTS) return false; // no workflow task completed: no event yet
    if (this.cursor.unplaced()) return 'call not placed';
    if (!seen.pending.model) return Date.now() - this.lastBatchAt >= EVENTS_LAG_MS && 'not relayed';
    return this.silentCall(seen) && 'call not in store';
  }

  /** A model call heartbeats deltas while the store shows none, describe after describe: its worker does not append. */
  private silentCall(seen: Described): boolean {
    return seen.pending.model?.deltas !== undefined && this.quietCalls++ >= QUIET_CALL_DESCRIBES;
  }

  /** Batches of runs not known yet: the run described now is this chain's (a continue-as-new), the others not. */
  private async whose(batches: DeltaBatch[]): Promise<Described | undefined> {
    const seen = await this.describe('run not known');
    if (!seen) return undefined;
    this.runs.add(seen.runId);
    for (const b of batches) if (!this.runs.has(b.runId)) this.foreign.add(b.runId);
    return seen;
  }

  /**
   * Reads the durable events after the last one sent, of run `runId` and the runs before it, and sends them (`at`: the
   * history they cover, '' when not known); places the call running now. False when the read failed (asked again).
   */
  private async *read(runId: string, at: string, cause: string): AsyncGenerator<StreamEvent, boolean> {
    ask(`read:${cause}`);
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

  /**
   * The batches, side entries and relayed entries appended since the last read of the store, waiting up to the idle
   * pause for some (`now`: not waiting).
   */
  private async block(now = false): Promise<StoreRead> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const late = new Promise<never>((_, reject) => {
      // after the I/O ready by then: a busy event loop that runs this late has not read the answer waiting yet
      const down = () => setImmediate(() => reject(new StoreDownError('no answer')));
      timer = setTimeout(down, this.idle + BLOCK_SLACK_MS);
    });
    let res;
    try {
      const keys = [this.key, this.eventsKey, this.lastId, this.relay.lastId];
      const wait = now ? [] : ['BLOCK', this.idle];
      const read = this.redis.xread('COUNT', 1000, ...(wait as ['BLOCK', number]), 'STREAMS', ...keys);
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
    const side = entries.flatMap(([, fields]) => parseSide(fields) ?? []);
    const opened = await Promise.all(stored.map((s) => openBatch(s, codecs)));
    const relayed = await Promise.all(relayedEntries.map(([, fields]) => openRelayEntry(fields, codecs)));
    return {
      batches: opened.filter((b) => b !== undefined),
      relayed: relayed.filter((e) => e !== undefined),
      side,
      closes: relayedEntries.length > 0 && relaysCloses(relayedEntries.at(-1)![1]),
    };
  }

  /** One describe of the run (undefined after a pause: Temporal unreachable). */
  private async describe(cause: string): Promise<Described | undefined> {
    ask(`describe:${cause}`);
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
    if (desc.status === 'RUNNING' && desc.historyLength <= FIRST_TASK_EVENTS) this.since = Date.now();
    const pending = desc.status === 'RUNNING' ? await pendingOf(desc.runId, desc.raw, this.details) : { tools: [] };
    const { runId, historyLength, status } = desc;
    return { runId, at: `${runId}/${historyLength}`, historyLength, status, pending };
  }

  /** The run closed and no worker answered the read for `closedReadTimeoutMs`: end without its last events. */
  private closedTimedOut(): boolean {
    const timeout = this.opts.closedReadTimeoutMs ?? Infinity;
    return Date.now() - (this.closedSince ?? Date.now()) >= timeout;
  }
}
