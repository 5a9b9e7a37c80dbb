/**
 * What a fleet-transport reader (store-reader.ts) took from a run's relayed events stream
 * (node-common/fleet-stream/relay-entries.ts) and has not sent yet: the durable events by sequence number, and where
 * each model call goes among them. Events are sent only in order, from the one after the last sent; one missing (an
 * append that failed, a trimmed or restarted store), too long to relay, or sealed under a key not held here, is a gap
 * the reader fills from the workflow (the `events` query).
 */
import type { LoggedEvent } from '../../common/events.js';
import { eventEntryId, type RelayEntry } from '../../node-common/fleet-stream/relay-entries.js';

/** A model call taken from the store: run `runId`'s call of transcript index `messageIndex`. */
export interface RelayedCallOf {
  runId: string;
  messageIndex: number;
}

export class RelayedEvents {
  /** The id of the last entry read (the first read asks for those after the reader's starting event). */
  lastId: string;
  /** Events taken and not sent yet, by sequence number (no `event`: to be read from the workflow). */
  private readonly held = new Map<number, { runId: string; event?: LoggedEvent }>();
  /** Model calls taken, by `runId/messageIndex`: the event each follows. */
  private readonly calls = new Map<string, RelayedCallOf & { after: number }>();
  /** Whether the run's worker relays its events (the store showed one): the reader then does not ask for them. */
  relaying = false;
  /** Whether it relays its run's close and its tools' updates too (0.11.0): the reader then does not ask for those. */
  closes = false;
  /** Tools started and not ended, and whether the last event sent was the end of the agent loop (its run may close). */
  private toolsRunning = 0;
  private ended = false;
  /** The run of the last entry taken. */
  lastRun = '';

  constructor(seq: number) {
    this.lastId = eventEntryId(seq);
  }

  /**
   * Keeps the entries read after the last event sent (`seq`); `closes`: their worker relays its run's close and tool
   * updates too (relay-entries.ts `relaysCloses`).
   */
  take(entries: RelayEntry[], seq: number, closes = false): void {
    if (entries.length > 0) this.closes = closes;
    for (const e of entries) {
      this.lastRun = e.runId;
      this.relaying = true;
      if (e.kind === 'call') this.calls.set(`${e.runId}/${e.messageIndex}`, e);
      else if (e.seq > seq) this.held.set(e.seq, { runId: e.runId, ...(e.event ? { event: e.event } : {}) });
    }
  }

  /** The runs of the entries held (a continue-as-new chain's runs: their delta batches are the reader's). */
  runs(): string[] {
    return [...new Set([...this.held.values(), ...this.calls.values()].map((e) => e.runId))];
  }

  /** The event after `seq`, when it is held with its body (it is then forgotten). */
  next(seq: number): LoggedEvent | undefined {
    const e = this.held.get(seq + 1)?.event;
    if (e) this.held.delete(seq + 1);
    if (!e) return undefined;
    this.toolsRunning = Math.max(
      0,
      this.toolsRunning + ({ tool_execution_start: 1, tool_execution_end: -1 }[e.type as string] ?? 0),
    );
    this.ended = e.type === 'agent_end';
    return e;
  }

  /**
   * Why the reader needs a describe soon when the store is quiet (undefined: it does not): the events do not come
   * through the store, or they do but a worker before 0.11.0 relays neither tool updates nor the run's close while a
   * tool runs (its updates come with describes) or the agent loop ended (the run may have closed).
   */
  describeSoon(): 'not relayed' | 'tool running' | 'loop ended' | undefined {
    if (!this.relaying) return 'not relayed';
    if (this.closes) return undefined;
    return this.toolsRunning > 0 ? 'tool running' : this.ended ? 'loop ended' : undefined;
  }

  /** The calls that follow event `seq` (those before it are forgotten). */
  placedAt(seq: number): RelayedCallOf[] {
    const out: RelayedCallOf[] = [];
    for (const [key, c] of this.calls) {
      if (c.after < seq) this.calls.delete(key);
      else if (c.after === seq) out.push(c);
    }
    return out;
  }

  /** Forgets the events up to `seq` (sent from the workflow). */
  sent(seq: number): void {
    for (const s of this.held.keys()) if (s <= seq) this.held.delete(s);
  }

  /** Whether events after `seq` are missing: a later one is held, or a call after a later one was taken. */
  gap(seq: number): boolean {
    return [...this.held.keys(), ...[...this.calls.values()].map((c) => c.after)].some((s) => s > seq);
  }
}
