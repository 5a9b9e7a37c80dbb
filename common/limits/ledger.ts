/**
 * The ledger of one provider key's limiter (workflows/limits/limiter.ts): token buckets per minute (requests, input
 * and output tokens) and the requests in flight, the waiting line by priority, and the provider's `retry-after`.
 * Deterministic arithmetic on workflow time: the limiter's Update and signal handlers call it, nothing else.
 *
 * - A request reserves before its provider call: one request, its estimated input tokens and an estimate of its
 *   output (the key's running mean of settled outputs, at most the request's `maxTokens`). Settled after the call
 *   with its real usage (the difference goes into the buckets), or released when no call was made.
 * - Buckets: each holds what was used and drains at limit/60 000 per ms (a provider's own token bucket). A request is
 *   granted when every bucket has room for it, the concurrent requests are below their limit, and no `retry-after`
 *   is running; a request alone in an empty bucket is granted even when larger than the limit (it would never fit).
 * - The line: a request that cannot go now takes a ticket (its place, kept across its attempts: `request` is the
 *   activity, not the attempt). Whenever room frees, tickets are granted in order — priority (1 first), then age —
 *   except that every {@link SHARE_EVERY}th grant goes to the oldest ticket whatever its priority: the minimum share
 *   of a low priority is 1 grant in {@link SHARE_EVERY} while it waits. The head of the line blocks the rest (no
 *   smaller request overtakes it).
 * - Leases: a ticket not asked about for {@link TICKET_LEASE_MS} is dropped (its run is gone); a grant not picked up
 *   by its ticket's next ask within {@link PICKUP_MS}, or not settled by its attempt's deadline, is reclaimed (its
 *   tokens stay counted), and at once when a newer attempt of its request asks. A worker's limits client that sends
 *   no batch for {@link CLIENT_LEASE_MS} is gone (its process died): the grants it picked up are reclaimed then — an
 *   attempt that ended just before its worker died leaves a settlement that never comes, and its concurrent-request
 *   slot must not wait for the attempt's deadline (a live client sends a batch every {@link CLIENT_KEEPALIVE_MS}
 *   while it holds a grant).
 * - `retry-after` (a 429 or 529 a request met anyway): no grant until it passes, and the limits count at
 *   {@link SLOW_FACTOR} for a minute after.
 */
import { limitSpec, type Priority, type ProviderLimit } from './definition.js';

/** Every this many grants one goes to the oldest waiting ticket, whatever its priority (the minimum share). */
export const SHARE_EVERY = 5;
/** A grant made for a waiting ticket must be picked up (the ticket's next ask) within this long, else it is reclaimed. */
export const PICKUP_MS = 20_000;
/** A ticket whose request did not ask again for this long is dropped (its worker and run are gone). */
export const TICKET_LEASE_MS = 60_000;
/** A worker's limits client not heard from for this long is gone: the grants it picked up are reclaimed. */
export const CLIENT_LEASE_MS = 45_000;
/** While a limits client holds a grant it sends a batch (empty if need be) at least this often. */
export const CLIENT_KEEPALIVE_MS = 10_000;
/** After a `retry-after`, the limits count at this share of themselves for a minute. */
export const SLOW_FACTOR = 0.8;
const SLOW_MS = 60_000;
/** Room a bucket keeps for the time from a grant to the provider's count of the request (the ask, the HTTP request). */
export const SLACK_MS = 1_000;

type Dim = 'requests' | 'input' | 'output';
const DIMS: [Dim, keyof ProviderLimit, string][] = [
  ['requests', 'requestsPerMinute', 'requests/min'],
  ['input', 'inputTokensPerMinute', 'tokens/min'],
  ['output', 'outputTokensPerMinute', 'output tokens/min'],
];

/** A request's ask (the `keelLimitsReserve` Update). */
export interface LimitAsk {
  /** `<workflowId>/<runId>/<activityId>`: one model request, whatever its attempts. */
  request: string;
  attempt: number;
  priority: Priority;
  /** Estimated input tokens. */
  input: number;
  /** Its `maxTokens`: the most output it can be charged for in advance. */
  outputCap: number;
  /** How long a grant may stay unsettled (the attempt's time left). */
  holdMs: number;
  /**
   * The asking worker's definition (`limitSpec`): a different one is reported in the answer. A batch's asks leave it
   * out (the batch carries it).
   */
  spec?: string;
  /** The workflow the request is for (`keel limits` lists it); default: the request's own (its part before `/<runId>/<activityId>`). */
  workflowId?: string;
}

export type LimitAnswer =
  | { granted: true; output: number; waitedMs: number; inUse: number; conflict?: string }
  | { granted: false; wait: string; position: number; retryInMs: number; inUse: number; conflict?: string };

/** A worker's asks and settlements of one tick, sent as one Update (`keelLimitsBatch`). */
export interface LimitBatch {
  /** The worker process's limits client (activities/limits/client.ts). */
  client: string;
  /** The worker's definition (`limitSpec`): a different one is reported in the answer. */
  spec: string;
  /** New asks (an attempt's first) and, now and then, all the client's waiting asks again. */
  asks: LimitAsk[];
  /** Attempts that ended (applied before the asks). */
  settles: LimitSettle[];
  /**
   * Answer only what the client has not been handed yet (0.11.0 clients): the grants picked up by this batch and those
   * of its asks, each as its attempt alone. Without it every grant of the client not settled yet is answered again,
   * with its output and wait, which made most of the limiter's history.
   */
  newOnly?: true;
}

/** The answer to a batch: the client's grants not settled yet (by request), and the line's wait. */
export interface LimitBatchAnswer {
  /** By request: the granted attempt (and, to a batch without `newOnly`, its output reservation and wait). */
  granted: Record<string, { attempt: number; output?: number; waitedMs?: number }>;
  /** The head of the line's wait (what a waiting run shows). */
  wait: string;
  /** When the client should ask again while it has waiting requests. */
  retryInMs: number;
  inUse: number;
  conflict?: string;
  /** How many requests wait in the line (to a batch with `newOnly`, when any): the client then settles at once. */
  waiting?: number;
}

/** An attempt's question: how its ask stands. */
export interface LimitQuestion {
  request: string;
  attempt: number;
  /** The asking worker's definition: a different one is reported in the answer. */
  spec: string;
}

/** A request's end (the `keelLimitsSettle` signal): its real usage, or nothing when no provider call was made. */
export interface LimitSettle {
  request: string;
  attempt: number;
  usage?: { input: number; output: number };
  /** The attempt gave up waiting (its time was nearly up): its ticket keeps its place for the next attempt. */
  keep?: true;
}

interface Ticket {
  attempt: number;
  priority: Priority;
  seq: number;
  since: number;
  input: number;
  outputCap: number;
  holdMs: number;
  lease: number;
  workflowId: string;
  /** The worker's limits client that waits for it (activities/limits/client.ts): its batches renew the lease. */
  client?: string;
}

interface Grant {
  attempt: number;
  priority: Priority;
  seq: number;
  since: number;
  input: number;
  output: number;
  expires: number;
  /** Its ask came after the grant (the attempt goes on to call the provider). */
  picked: boolean;
  grantedAt: number;
  workflowId: string;
  /** The worker's limits client that asked for it (its batches are answered with it until it is settled). */
  client?: string;
  /** How long it may stay unsettled once picked up (its ticket's `holdMs`). */
  holdMs?: number;
}

/** The ledger as carried across continue-as-new (plain JSON). */
export interface LedgerState {
  key: string;
  limit: ProviderLimit;
  used: Record<Dim, number>;
  at: number;
  inFlight: Record<string, Grant>;
  waiting: Record<string, Ticket>;
  seq: number;
  grants: number;
  pausedUntil?: number;
  slowUntil?: number;
  meanOutput?: number;
  /** When each worker's limits client last sent a batch (its grants are reclaimed {@link CLIENT_LEASE_MS} after). */
  clients?: Record<string, number>;
  /** Totals since the limiter started: what `keel limits` and the bench report. */
  totals: { granted: number; settledInput: number; settledOutput: number; waited: number; backoffs: number };
  /** The last {@link RECENT_WAITS} grants' waits (ms) by priority: `keel limits` shows their median. */
  recentWaits?: { priority: Priority; ms: number }[];
}

/** How many recent waits the ledger keeps. */
export const RECENT_WAITS = 200;

export function newLedger(key: string, limit: ProviderLimit, now: number): LedgerState {
  return {
    key,
    limit,
    used: { requests: 0, input: 0, output: 0 },
    at: now,
    inFlight: {},
    waiting: {},
    seq: 0,
    grants: 0,
    totals: { granted: 0, settledInput: 0, settledOutput: 0, waited: 0, backoffs: 0 },
  };
}

/** What `keel limits`, the limiter's details and its `keelLimitsState` query show. */
export interface LimiterSnapshot {
  key: string;
  limit: ProviderLimit;
  spec: string;
  /** Rounded bucket levels (what the last minute used, reservations included) and the requests in flight. */
  inUse: { requests: number; input: number; output: number; concurrent: number };
  /** Waiting requests by priority: how many, and the oldest one's wait in ms. */
  waiting: { priority: Priority; count: number; oldestMs: number; workflowIds: string[] }[];
  pausedForMs?: number;
  totals: LedgerState['totals'];
  /** The recent grants' waits (ms) by priority, oldest first. */
  recentWaits: { priority: Priority; ms: number }[];
}

/** The workflow id of a request `<workflowId>/<runId>/<activityId>` (a workflow id may hold `/`, the others not). */
export function requestWorkflowId(request: string): string {
  return request.split('/').slice(0, -2).join('/') || request;
}

function grouped(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

export class LimiterLedger {
  constructor(readonly st: LedgerState) {}

  /**
   * An ask: its ticket is taken, or renewed, and whatever now fits is granted. A newer
   * attempt of a granted request means the earlier one was lost: its slot is released and the request waits in its
   * old place. The answer is read with {@link answer}.
   */
  ask(ask: LimitAsk, now: number): void {
    this.advance(now);
    const held = this.st.inFlight[ask.request];
    if (held && held.attempt >= ask.attempt) return this.pickUp(held, ask.holdMs, now);
    this.register(ask, now);
    this.allocate(now);
    const granted = this.st.inFlight[ask.request];
    if (granted) this.pickUp(granted, ask.holdMs, now);
  }

  /**
   * A worker's batch (the `keelLimitsBatch` Update, activities/limits/client.ts): its settlements, then its new asks
   * (tickets taken or renewed, for its `client`), the leases of all its tickets renewed, and whatever now fits
   * granted. Answered with every grant of the client not settled yet (picked up now: the client hands each to its
   * attempt), the head of the line's wait and when to ask again. Asking again with the same batch is harmless.
   */
  batch(b: LimitBatch, now: number): LimitBatchAnswer {
    (this.st.clients ??= {})[b.client] = now;
    this.advance(now);
    for (const s of b.settles) this.settle(s, now);
    for (const ask of b.asks) {
      const held = this.st.inFlight[ask.request] ?? this.st.waiting[ask.request];
      if (held && held.attempt > ask.attempt) continue; // a stale attempt (its request has a newer one)
      if (held && held.attempt === ask.attempt && this.st.inFlight[ask.request]) held.client = b.client;
      else this.register(ask, now, b.client);
    }
    for (const t of Object.values(this.st.waiting)) if (t.client === b.client) t.lease = now + TICKET_LEASE_MS;
    this.allocate(now);
    const granted = this.handOut(b, now);
    const head = this.headWait(now);
    const conflict = b.spec === limitSpec(this.st.limit) ? {} : { conflict: this.conflictText(b.spec) };
    const waiting = Object.keys(this.st.waiting).length;
    const line = b.newOnly && waiting > 0 ? { waiting } : {};
    return { granted, ...head, inUse: Math.ceil(this.st.used.input), ...conflict, ...line };
  }

  /**
   * The grants a batch is answered with, each picked up now: every grant of its client not settled yet, or with
   * `newOnly` those not handed to it before (picked up now) and those of its asks (a repeated batch gets them again).
   */
  private handOut(b: LimitBatch, now: number): LimitBatchAnswer['granted'] {
    const asked = b.newOnly ? new Set(b.asks.map((a) => a.request)) : undefined;
    const granted: LimitBatchAnswer['granted'] = {};
    for (const [request, g] of Object.entries(this.st.inFlight)) {
      if (g.client !== b.client) continue;
      const handed = g.picked;
      this.pickUp(g, g.holdMs ?? PICKUP_MS, now);
      if (!asked) granted[request] = { attempt: g.attempt, output: g.output, waitedMs: g.grantedAt - g.since };
      else if (!handed || asked.has(request)) granted[request] = { attempt: g.attempt };
    }
    return granted;
  }

  /** A ticket taken for `ask`, or its ticket renewed (a granted earlier attempt was lost: it waits in its old place). */
  private register(ask: LimitAsk, now: number, client?: string): void {
    const held = this.st.inFlight[ask.request];
    if (held) this.requeueLost(ask.request, held, ask, now);
    const ticket = (this.st.waiting[ask.request] ??= this.ticket(ask, now));
    Object.assign(ticket, {
      attempt: ask.attempt,
      priority: ask.priority,
      input: ask.input,
      outputCap: ask.outputCap,
      holdMs: ask.holdMs,
      lease: now + TICKET_LEASE_MS,
      client,
    });
  }

  /** The head of the line's wait as text and when to ask again (the time until it may fit, 25 ms to 1 s). */
  private headWait(now: number): { wait: string; retryInMs: number } {
    const head = this.next();
    const why = head ? this.blocked(head[1], now) : undefined;
    return { wait: this.waitText(why, 0), retryInMs: Math.min(Math.max(why?.inMs ?? 250, 25), 1_000) };
  }

  /**
   * A grant reaches the ask it was made for (made for it while it waited, or just now): from now it lasts the attempt's
   * time, and its amounts go into the buckets now — the provider counts the request from now on. Until then it was
   * only promised (it held its room: {@link promised}). Once per grant.
   */
  private pickUp(g: Grant, holdMs: number, now: number): void {
    if (g.picked) return;
    g.picked = true;
    g.expires = now + holdMs;
    this.st.used.requests += 1;
    this.st.used.input += g.input;
    this.st.used.output += g.output;
  }

  /** What grants not picked up yet hold of each bucket (they do not drain until picked up). */
  private promised(): Record<Dim, number> {
    const p: Record<Dim, number> = { requests: 0, input: 0, output: 0 };
    for (const g of Object.values(this.st.inFlight))
      if (!g.picked) {
        p.requests += 1;
        p.input += g.input;
        p.output += g.output;
      }
    return p;
  }

  /** An ask and its answer at once (the `keelLimitsAsk` Update). */
  reserve(a: LimitAsk, now: number): LimitAnswer {
    this.ask(a, now);
    return this.answer({ ...a, spec: a.spec ?? limitSpec(this.st.limit) }, now);
  }

  /** The answer to an attempt's ask (no change): granted, or the wait and when to ask again. */
  answer(q: LimitQuestion, now: number): LimitAnswer {
    const conflict = q.spec === limitSpec(this.st.limit) ? {} : { conflict: this.conflictText(q.spec) };
    const g = this.st.inFlight[q.request];
    if (g && g.attempt === q.attempt)
      return {
        granted: true,
        output: g.output,
        waitedMs: g.grantedAt - g.since,
        inUse: Math.ceil(this.st.used.input),
        ...conflict,
      };
    if (this.st.waiting[q.request]) return { ...this.waitAnswer(q.request, now), ...conflict };
    return { granted: false, wait: `waiting for ${this.st.key}`, position: 0, retryInMs: 100, inUse: 0, ...conflict };
  }

  /** A request ended: its real usage replaces its reservation (none: no call was made, all of it is released). */
  settle(s: LimitSettle, now: number): void {
    this.advance(now);
    const ticket = this.st.waiting[s.request];
    if (ticket && ticket.attempt <= s.attempt) {
      if (s.keep) delete ticket.client;
      else delete this.st.waiting[s.request];
    }
    const g = this.st.inFlight[s.request];
    if (g && g.attempt === s.attempt) {
      delete this.st.inFlight[s.request];
      if (!g.picked) return this.allocate(now);
      const u = this.st.used;
      const real = s.usage ?? { input: 0, output: 0 };
      if (!s.usage) u.requests = Math.max(0, u.requests - 1);
      u.input = Math.max(0, u.input + real.input - g.input);
      u.output = Math.max(0, u.output + real.output - g.output);
      if (s.usage) {
        this.st.meanOutput =
          this.st.meanOutput === undefined ? real.output : this.st.meanOutput * 0.8 + real.output * 0.2;
        this.st.totals.settledInput += real.input;
        this.st.totals.settledOutput += real.output;
      }
    }
    this.allocate(now);
  }

  /** The provider asked to retry after `ms` (a 429 / 529 some request met): every request waits, then runs slower. */
  backoff(ms: number, now: number): void {
    this.advance(now);
    this.st.pausedUntil = Math.max(this.st.pausedUntil ?? 0, now + ms);
    this.st.slowUntil = this.st.pausedUntil + SLOW_MS;
    this.st.totals.backoffs += 1;
  }

  /** A new definition replaces the held one (an operator's change, not sent by any command yet): what is in use stays counted. */
  redefine(limit: ProviderLimit): void {
    this.st.limit = limit;
  }

  /** Drains the buckets to `now`, drops lapsed tickets and reclaims lapsed grants, grants what now fits. */
  advance(now: number): void {
    const st = this.st;
    const dt = Math.max(0, now - st.at);
    for (const [dim, field] of DIMS) {
      const per = st.limit[field];
      if (per !== undefined) st.used[dim] = Math.max(0, st.used[dim] - (per / 60_000) * dt);
    }
    st.at = Math.max(st.at, now);
    for (const [k, t] of Object.entries(st.waiting)) if (t.lease < now) delete st.waiting[k];
    for (const [k, g] of Object.entries(st.inFlight)) if (this.lapsed(g, now)) delete st.inFlight[k];
    for (const [c, seen] of Object.entries(st.clients ?? {})) if (seen + CLIENT_LEASE_MS < now) delete st.clients![c];
    if (st.pausedUntil !== undefined && st.pausedUntil <= now) delete st.pausedUntil;
    if (st.slowUntil !== undefined && st.slowUntil <= now) delete st.slowUntil;
    this.allocate(now);
  }

  /**
   * A grant past its time: not settled by its deadline (or not picked up in time), or past its client's lease.
   */
  private lapsed(g: Grant, now: number): boolean {
    return Math.min(g.expires, this.leaseEnd(g)) < now;
  }

  /**
   * When the lease of the client that picked `g` up ends ({@link CLIENT_LEASE_MS} after its last batch), else never
   * (not picked up yet, or a client the ledger has not seen since it carried the ledger over: counted as live). A
   * silent client's tickets keep their own lease: the next attempt of their request keeps its place.
   */
  private leaseEnd(g: Grant): number {
    const seen = g.picked && g.client !== undefined ? this.st.clients?.[g.client] : undefined;
    return seen === undefined ? Infinity : seen + CLIENT_LEASE_MS;
  }

  /**
   * The earliest time something held lapses — a ticket's lease, a grant's deadline, a silent client's lease on what it
   * picked up — or undefined when nothing is held (the limiter wakes then: {@link advance} reclaims it).
   */
  nextLapse(): number | undefined {
    let at = Infinity;
    for (const t of Object.values(this.st.waiting)) at = Math.min(at, t.lease);
    for (const g of Object.values(this.st.inFlight)) at = Math.min(at, g.expires, this.leaseEnd(g));
    return at === Infinity ? undefined : at;
  }

  /** The current use and the line by priority (no change). */
  snapshot(now: number): LimiterSnapshot {
    const st = this.st;
    const byPriority = new Map<Priority, LimiterSnapshot['waiting'][number]>();
    for (const t of Object.values(st.waiting).sort((a, b) => a.seq - b.seq)) {
      const line = byPriority.get(t.priority) ?? { priority: t.priority, count: 0, oldestMs: 0, workflowIds: [] };
      line.count += 1;
      line.oldestMs = Math.max(line.oldestMs, now - t.since);
      if (line.workflowIds.length < 10) line.workflowIds.push(t.workflowId);
      byPriority.set(t.priority, line);
    }
    return {
      key: st.key,
      limit: st.limit,
      spec: limitSpec(st.limit),
      inUse: {
        requests: Math.ceil(st.used.requests),
        input: Math.ceil(st.used.input),
        output: Math.ceil(st.used.output),
        concurrent: Object.keys(st.inFlight).length,
      },
      waiting: [...byPriority.values()].sort((a, b) => a.priority - b.priority),
      ...(st.pausedUntil !== undefined && st.pausedUntil > now ? { pausedForMs: st.pausedUntil - now } : {}),
      totals: { ...st.totals },
      recentWaits: [...(st.recentWaits ?? [])],
    };
  }

  /** The text of a definition that differs from the held one (the held one is enforced). */
  conflictText(spec: string): string {
    return `Provider limits for ${this.st.key} differ: this namespace's limiter enforces ${limitSpec(this.st.limit) || 'no limit'}, this worker was given ${spec || 'no limit'}`;
  }

  private ticket(ask: LimitAsk, now: number): Ticket {
    this.st.seq += 1;
    return {
      attempt: ask.attempt,
      priority: ask.priority,
      seq: this.st.seq,
      since: now,
      input: ask.input,
      outputCap: ask.outputCap,
      holdMs: ask.holdMs,
      lease: now + TICKET_LEASE_MS,
      workflowId: ask.workflowId ?? requestWorkflowId(ask.request),
    };
  }

  /** A grant whose attempt was lost (a newer attempt asks): its slot is released, the request waits in its old place. */
  private requeueLost(request: string, g: Grant, ask: LimitAsk, now: number): void {
    delete this.st.inFlight[request];
    this.st.waiting[request] = { ...this.ticket(ask, now), seq: g.seq, since: g.since };
  }

  /**
   * The bucket's size: `burstSeconds` of the per-minute limit (slowed after a `retry-after`), less what it refills in
   * {@link SLACK_MS} (the time from a grant to the provider's count of the request).
   */
  private limitOf(dim: Dim, now: number): number | undefined {
    const per = this.st.limit[DIMS.find((d) => d[0] === dim)![1]];
    if (per === undefined) return undefined;
    const size = (per * Math.min(this.st.limit.burstSeconds ?? 60, 60)) / 60 - (per / 60_000) * SLACK_MS;
    return Math.max(this.st.slowUntil !== undefined && this.st.slowUntil > now ? size * SLOW_FACTOR : size, 1);
  }

  private outputOf(t: Ticket): number {
    const mean = this.st.meanOutput === undefined ? t.outputCap : Math.ceil(this.st.meanOutput * 1.25);
    return Math.min(t.outputCap, Math.max(1, mean));
  }

  /** Why `t` cannot be granted now (the wait text's limit, and ms until it may), else undefined. */
  private blocked(t: Ticket, now: number): { what: string; inUse: number; limit: number; inMs: number } | undefined {
    const st = this.st;
    if (st.pausedUntil !== undefined && st.pausedUntil > now)
      return { what: 'retry-after', inUse: 0, limit: 0, inMs: st.pausedUntil - now };
    const concurrent = st.limit.concurrentRequests;
    const flying = Object.keys(st.inFlight).length;
    if (concurrent !== undefined && flying >= concurrent)
      return { what: 'concurrent requests', inUse: flying, limit: concurrent, inMs: 250 };
    const need: Record<Dim, number> = { requests: 1, input: t.input, output: this.outputOf(t) };
    const promised = this.promised();
    for (const [dim, field, label] of DIMS) {
      const limit = this.limitOf(dim, now);
      const held = st.used[dim] + promised[dim];
      if (limit === undefined || held === 0 || held + need[dim] <= limit) continue;
      const per = st.limit[field]! / 60_000;
      const inMs = Math.ceil((held + Math.min(need[dim], limit) - limit) / per);
      return { what: label, inUse: held, limit: st.limit[field]!, inMs: Math.max(inMs, 1) };
    }
    return undefined;
  }

  /** The next ticket to grant: every SHARE_EVERY-th grant the oldest, else the first by priority then age. */
  private next(): [string, Ticket] | undefined {
    const share = this.st.grants % SHARE_EVERY === SHARE_EVERY - 1;
    let best: [string, Ticket] | undefined;
    for (const e of Object.entries(this.st.waiting)) {
      const [, t] = e;
      if (!best) best = e;
      else if (
        share
          ? t.seq < best[1].seq
          : t.priority < best[1].priority || (t.priority === best[1].priority && t.seq < best[1].seq)
      )
        best = e;
    }
    return best;
  }

  /** Grants waiting tickets in order while they fit. */
  private allocate(now: number): void {
    for (let e = this.next(); e && !this.blocked(e[1], now); e = this.next()) {
      const [request, t] = e;
      const output = this.outputOf(t);
      delete this.st.waiting[request];
      this.st.inFlight[request] = {
        attempt: t.attempt,
        priority: t.priority,
        seq: t.seq,
        since: t.since,
        input: t.input,
        output,
        expires: now + PICKUP_MS,
        picked: false,
        grantedAt: now,
        workflowId: t.workflowId,
        ...(t.client !== undefined ? { client: t.client, holdMs: t.holdMs } : {}),
      };
      this.st.grants += 1;
      this.st.totals.granted += 1;
      if (now > t.since) this.st.totals.waited += 1;
      const waits = (this.st.recentWaits ??= []);
      waits.push({ priority: t.priority, ms: now - t.since });
      if (waits.length > RECENT_WAITS) waits.splice(0, waits.length - RECENT_WAITS);
    }
  }

  /** What a waiting request's run shows: the limit that holds the head of the line back, in use of its size. */
  private waitText(why: ReturnType<LimiterLedger['blocked']>, position: number): string {
    const key = this.st.key;
    return !why
      ? `waiting for ${key}: ${position} requests ahead`
      : why.what === 'retry-after'
        ? `waiting for ${key}: the provider asked to retry after ${Math.ceil(why.inMs / 1000)} s`
        : `waiting for ${key} ${why.what}: ${grouped(why.inUse)} of ${grouped(why.limit)} in use`;
  }

  /** The answer to a ticket still waiting: the head's blocking limit as text, its place, when to ask again. */
  private waitAnswer(request: string, now: number): LimitAnswer {
    const mine = this.st.waiting[request];
    const head = this.next();
    const why = head ? this.blocked(head[1], now) : undefined;
    const position = Object.values(this.st.waiting).filter(
      (t) => t.priority < mine.priority || (t.priority === mine.priority && t.seq < mine.seq),
    ).length;
    const wait = this.waitText(why, position);
    const base = why?.inMs ?? 250;
    // the front of the line asks often (a grant made for it waits until it asks), the back less (history)
    const retryInMs = Math.min(Math.max(base, 100) + position * 50, position < 4 ? 1_000 : 5_000);
    return { granted: false, wait, position, retryInMs, inUse: Math.ceil(this.st.used.input) };
  }
}
