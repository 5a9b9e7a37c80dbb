/**
 * One worker process's client of one provider key's limiter (docs/provider-limits.md): every model request attempt of
 * the worker that waits for the key hands its ask here, and the client sends the asks and settlements gathered in one
 * tick to the limiter as one `keelLimitsBatch` Update — one Update in flight at a time, the next as soon as there is
 * something new or when the limiter said to ask again — and hands each attempt its own answer. Under load this is a
 * few large Updates instead of one per attempt every few hundred milliseconds (which the server aborted by thousands).
 * The limiter keeps the durable part (tickets per request, leases, reclaim): a lost client loses no place in line.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { WithStartWorkflowOperation, WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { Workflow } from '@temporalio/common';
import { limitSpec, type ProviderLimit } from '../../common/limits/definition.js';
import {
  CLIENT_KEEPALIVE_MS,
  type LimitAsk,
  type LimitBatch,
  type LimitBatchAnswer,
  type LimitSettle,
} from '../../common/limits/ledger.js';
import { LIMITER_WORKFLOW_TYPE, LIMITS_BATCH_UPDATE, type LimiterInput } from '../../common/limits/protocol.js';

/** What an attempt waiting for room hears: each answer while it waits, then its grant. */
export interface LimitWaiter {
  /** The line's wait (its run shows it), the input tokens in use and any definition conflict. */
  waiting(wait: string, inUse: number, conflict: string | undefined): void;
}

/** The grant an attempt receives: the input tokens in use and any definition conflict. */
export interface LimitGrant {
  inUse: number;
  conflict?: string;
}

/** Every this often the client sends all its waiting asks again (a limiter that lost them takes them back). */
export const RESEND_MS = 15_000;
/** How long the limiter may be unreachable before the waiting attempts fail (retryably). */
export const REACH_PATIENCE_MS = 120_000;
/** The pause before the next batch when something new came while one was in flight (gathers the tick's asks). */
const GATHER_MS = 25;
/**
 * How long a settlement may wait for the next batch when nothing waits for room (the key has no concurrent-requests
 * limit, no request waits in the line as of the last answer, none of this client's): it then rides with the next ask
 * instead of an Update of its own. Its reservation stays counted meanwhile (the real usage replaces it on arrival).
 */
export const SETTLE_HOLD_MS = 500;

interface Pending {
  ask: LimitAsk;
  waiter: LimitWaiter;
  resolve(grant: LimitGrant): void;
  reject(err: Error): void;
}

/** The batched asks of one worker process for one key's limiter. */
export class LimitsClient {
  /** This client's name in the limiter's tickets: host, process and a random part (a restarted worker is another). */
  readonly id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly waiting = new Map<string, Pending>();
  private fresh: LimitAsk[] = [];
  private settles: { settle: LimitSettle; done(): void }[] = [];
  /** Requests granted to an attempt and not settled yet: while any, a batch goes at least every keep-alive. */
  private readonly held = new Set<string>();
  private sending = false;
  private timer?: ReturnType<typeof setTimeout>;
  private nextAt = 0;
  private lastResend = Date.now();
  private failingSince?: number;
  private pause = 250;
  /** Requests waiting in the limiter's line as of its last answer (others' included). */
  private lineWaiting = 0;

  constructor(
    private readonly client: Client,
    private readonly taskQueue: string,
    private readonly workflowId: string,
    private readonly key: string,
    private readonly limit: ProviderLimit,
  ) {}

  /** Waits for room for `ask` (rejects when the limiter stays unreachable); `waiter` hears each answer meanwhile. */
  ask(ask: LimitAsk, waiter: LimitWaiter): Promise<LimitGrant> {
    return new Promise((resolve, reject) => {
      this.waiting.set(ask.request, { ask, waiter, resolve, reject });
      this.fresh.push(ask);
      this.schedule(0);
    });
  }

  /** The attempt stopped waiting (cancelled, or `keep`: its time was nearly up and its next attempt keeps the place). */
  abandon(ask: LimitAsk, keep: boolean): Promise<void> {
    if (this.waiting.get(ask.request)?.ask === ask) this.waiting.delete(ask.request);
    return this.settle({ request: ask.request, attempt: ask.attempt, ...(keep ? { keep: true as const } : {}) });
  }

  /**
   * An attempt ended: sent with the next batch — at once when something waits for room, else within
   * {@link SETTLE_HOLD_MS} (with the next ask if one comes first); resolves once sent (or given up: the limiter
   * reclaims by lease).
   */
  settle(settle: LimitSettle): Promise<void> {
    this.held.delete(settle.request);
    return new Promise((done) => {
      this.settles.push({ settle, done });
      const urgent = this.limit.concurrentRequests !== undefined || this.lineWaiting > 0 || this.waiting.size > 0;
      this.schedule(urgent ? 0 : SETTLE_HOLD_MS);
    });
  }

  /** Sends the next batch in `ms` (sooner if already planned sooner), unless one is in flight (it plans the next). */
  private schedule(ms: number): void {
    if (this.sending) return;
    const at = Date.now() + ms;
    if (this.timer && this.nextAt <= at) return;
    if (this.timer) clearTimeout(this.timer);
    this.nextAt = at;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush();
    }, ms);
    this.timer.unref(); // a held settlement does not keep an ending process alive (its lease reclaims it)
  }

  private async flush(): Promise<void> {
    const resend = Date.now() - this.lastResend >= RESEND_MS;
    if (resend) this.lastResend = Date.now();
    const fresh = this.fresh.splice(0);
    const asks = resend ? [...this.waiting.values()].map((p) => p.ask) : fresh.filter((a) => this.isWaiting(a));
    const settles = this.settles.splice(0);
    if (asks.length === 0 && settles.length === 0 && this.waiting.size === 0 && this.held.size === 0) return;
    this.sending = true;
    let retryInMs = this.pause;
    try {
      const answer = await this.send({
        client: this.id,
        spec: limitSpec(this.limit),
        asks,
        settles: settles.map((s) => s.settle),
        newOnly: true,
      });
      this.failingSince = undefined;
      this.pause = 250;
      settles.forEach((s) => s.done());
      this.hand(answer);
      retryInMs = answer.retryInMs;
    } catch (err) {
      this.failed(err as Error, fresh, settles);
      this.lastResend = 0; // the lost answer may have held grants: the next batch asks for all waiting ones again
      this.pause = Math.min(this.pause * 2, 5_000);
    } finally {
      this.sending = false;
    }
    if (this.fresh.length > 0 || this.settles.length > 0) this.schedule(GATHER_MS);
    else if (this.waiting.size > 0) this.schedule(retryInMs);
    else if (this.held.size > 0) this.schedule(CLIENT_KEEPALIVE_MS); // the limiter's lease on this client's grants
  }

  private isWaiting(ask: LimitAsk): boolean {
    return this.waiting.get(ask.request)?.ask === ask;
  }

  /** Each waiting attempt gets its grant, or hears the wait. */
  private hand(answer: LimitBatchAnswer): void {
    this.lineWaiting = answer.waiting ?? 0;
    for (const [request, p] of this.waiting) {
      const g = answer.granted[request];
      if (g && g.attempt === p.ask.attempt) {
        this.waiting.delete(request);
        this.held.add(request);
        p.resolve({ inUse: answer.inUse, conflict: answer.conflict });
      } else p.waiter.waiting(answer.wait, answer.inUse, answer.conflict);
    }
  }

  /** A batch failed: its asks and settlements go with the next one; after long enough the waiting attempts fail. */
  private failed(err: Error, fresh: LimitAsk[], settles: { settle: LimitSettle; done(): void }[]): void {
    this.fresh.unshift(...fresh.filter((a) => this.isWaiting(a)));
    this.failingSince ??= Date.now();
    if (Date.now() - this.failingSince < REACH_PATIENCE_MS) {
      this.settles.unshift(...settles);
      return;
    }
    settles.forEach((s) => s.done()); // the limiter reclaims them by lease
    const reason = new Error(
      `The ${this.key} limiter (workflow ${this.workflowId}) could not be reached: ${err.message}`,
    );
    for (const p of this.waiting.values()) p.reject(reason);
    this.waiting.clear();
    this.fresh = [];
    this.failingSince = undefined;
  }

  /** One batch, answered at once; the key's limiter is started by the first (Update-with-start). */
  private async send(batch: LimitBatch): Promise<LimitBatchAnswer> {
    try {
      return await this.client.workflow
        .getHandle(this.workflowId)
        .executeUpdate<LimitBatchAnswer, [LimitBatch]>(LIMITS_BATCH_UPDATE, { args: [batch] });
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      return this.client.workflow.executeUpdateWithStart<Workflow, LimitBatchAnswer, [LimitBatch]>(
        LIMITS_BATCH_UPDATE,
        {
          args: [batch],
          startWorkflowOperation: new WithStartWorkflowOperation(LIMITER_WORKFLOW_TYPE, {
            workflowId: this.workflowId,
            taskQueue: this.taskQueue,
            workflowIdConflictPolicy: 'USE_EXISTING',
            args: [{ key: this.key, limit: this.limit } satisfies LimiterInput],
          }),
        },
      );
    }
  }
}
