/**
 * The activity side of provider limits (docs/provider-limits.md): each model request attempt of a run — `callModel`
 * or `compact` — whose model matches a configured key asks that key's limiter workflow for room before its provider
 * call through the worker's limits client (activities/limits/client.ts: one `keelLimitsBatch` Update per tick for all
 * the worker's attempts), waits until granted (heartbeating, its run's details saying why), and settles its real
 * usage after (with the client's next batch). A 429 / 529
 * with `retry-after` is reported to the limiter (`keelLimitsBackoff`), which holds every request of the key back.
 * No workflow command of the run changes: all of it happens inside the model activity, through the worker's client.
 */
import { Context } from '@temporalio/activity';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { ErrorType } from '../../common/errors.js';
import {
  INTERACTIVE_PRIORITY,
  limitFor,
  limiterWorkflowId,
  type Priority,
  type ProviderLimit,
  type ProviderLimits,
} from '../../common/limits/definition.js';
import type { LimitAsk } from '../../common/limits/ledger.js';
import { LIMITS_BACKOFF_SIGNAL, PROVIDER_WAIT_SIGNAL } from '../../common/limits/protocol.js';
import type { Usage } from '../../common/messages.js';
import { signalWithRetries } from '../signal-retries.js';
import { LimitsClient, type LimitWaiter } from './client.js';

/** How long before its `startToCloseTimeout` an attempt stops waiting (fails retryably; the next keeps its place). */
export const LIMIT_WAIT_MARGIN_MS = 120_000;

/** The worker's provider limits, asked by each model request attempt (one per worker, one limits client per key). */
export class ProviderLimitsGate {
  private readonly warned = new Set<string>();
  private readonly clients = new Map<string, LimitsClient>();
  constructor(readonly limits: ProviderLimits) {}

  /** The limits of one attempt of a request for `model`, or undefined when no key matches it (nothing asked). */
  forAttempt(model: string, priority: Priority | undefined): AttemptLimits | undefined {
    const found = limitFor(this.limits, model);
    if (!found) return undefined;
    const ctx = Context.current();
    return new AttemptLimits(
      found.key,
      priority ?? INTERACTIVE_PRIORITY,
      this.clientFor(ctx, found.key, found.limit),
      (t) => this.warnOnce(ctx, t),
    );
  }

  /** This worker's client of the key's limiter on the attempt's task queue. */
  private clientFor(ctx: Context, key: string, limit: ProviderLimit): LimitsClient {
    const workflowId = limiterWorkflowId(ctx.info.taskQueue, key);
    let client = this.clients.get(workflowId);
    if (!client)
      this.clients.set(workflowId, (client = new LimitsClient(ctx.client, ctx.info.taskQueue, workflowId, key, limit)));
    return client;
  }

  private warnOnce(ctx: Context, text: string): void {
    if (this.warned.has(text)) return;
    this.warned.add(text);
    ctx.log.warn(`${text}; the limiter's definition is enforced (docs/provider-limits.md: one definition per key)`);
  }
}

/** One attempt's reservation with its key's limiter: acquire before the provider call, end after. */
export class AttemptLimits {
  private ask?: LimitAsk;
  private granted = false;

  constructor(
    readonly key: string,
    private readonly priority: Priority,
    private readonly client: LimitsClient,
    private readonly warn: (text: string) => void,
  ) {}

  /**
   * Waits until the limiter grants room for `input` estimated tokens (and at most `outputCap` output). Throws a
   * `CancelledFailure` when the activity is cancelled, a retryable `ProviderLimitWait` failure when the attempt's time
   * is nearly up (the next attempt keeps the place in line) or the limiter cannot be reached.
   */
  async acquire(input: number, outputCap: number): Promise<void> {
    const ctx = Context.current();
    const { activityId, attempt } = ctx.info;
    const wf = ctx.info.workflowExecution!;
    const ask: LimitAsk = {
      request: `${wf.workflowId}/${wf.runId}/${activityId}`,
      attempt,
      priority: this.priority,
      input: Math.ceil(input),
      outputCap,
      holdMs: ctx.info.startToCloseTimeoutMs + 60_000,
    };
    this.ask = ask;
    const started = performance.now();
    const run = new RunWaitText(ctx);
    const waiter: LimitWaiter = {
      waiting: (wait, inUse, conflict) => {
        if (conflict) this.warn(conflict);
        inUseGauge(ctx, this.key, inUse);
        run.say(wait);
      },
    };
    const timeUp = Math.max(ctx.info.startToCloseTimeoutMs - LIMIT_WAIT_MARGIN_MS, ctx.info.startToCloseTimeoutMs / 2);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const grant = await Promise.race([
        this.client.ask(ask, waiter),
        ctx.cancelled,
        new Promise<'time up'>((r) => (timer = setTimeout(() => r('time up'), timeUp))),
      ]);
      if (grant === 'time up') {
        await this.client.abandon(ask, true);
        this.ask = undefined;
        throw ApplicationFailure.create({
          message: `This model request waited for the ${this.key} limits until its attempt's time was nearly up (${run.latest ?? `waiting for ${this.key}`}); the next attempt waits on in its place`,
          type: ErrorType.ProviderLimitWait,
          nextRetryDelay: '1s',
        });
      }
      if (grant.conflict) this.warn(grant.conflict);
      inUseGauge(ctx, this.key, grant.inUse);
      this.granted = true;
      waitHistogram(ctx, this.key, performance.now() - started);
    } catch (err) {
      if (ctx.cancellationSignal.aborted) {
        if (this.ask) await this.client.abandon(ask, false);
        this.ask = undefined;
        throw new CancelledFailure('Operation aborted');
      }
      if (err instanceof ApplicationFailure) throw err;
      this.ask = undefined;
      throw ApplicationFailure.create({ message: (err as Error).message, type: ErrorType.ProviderLimitWait });
    } finally {
      clearTimeout(timer);
      await run.done();
    }
  }

  /**
   * The attempt ended: its real usage (undefined when no provider call was made) replaces its reservation, sent with
   * the client's next batch. Not awaited: the attempt ends now (a settlement lost with its worker is reclaimed by its
   * lease).
   */
  async end(usage: Usage | undefined, made = usage !== undefined): Promise<void> {
    if (!this.ask) return;
    const ask = this.ask;
    this.ask = undefined;
    if (!this.granted) return this.client.abandon(ask, false);
    void this.client.settle({
      request: ask.request,
      attempt: ask.attempt,
      ...(made ? { usage: { input: usageInput(usage), output: usage?.output ?? 0 } } : {}),
    });
  }

  /** The provider answered 429 / 529 asking to retry after `ms`: every request of the key holds back that long. */
  async backoff(ms: number): Promise<void> {
    await signalLimiter(this.key, LIMITS_BACKOFF_SIGNAL, { ms });
  }

  /** Whether room was granted (then `end` must be called). */
  get holds(): boolean {
    return this.granted;
  }
}

/**
 * How often at most a waiting attempt tells its run a changed wait line (the first one goes at once). The line's
 * figures change with nearly every answer of the limiter: told each time, 500 waiting runs took some 80 signals and
 * workflow tasks a second from a 2-core machine busy with the calls themselves.
 */
export const RETELL_MS = 30_000;

/**
 * What a waiting attempt's run shows (its `keelProviderWait` signal): said when it starts waiting, then its latest
 * line at most every {@link RETELL_MS} while it changes, cleared at the end.
 */
class RunWaitText {
  /** The latest line heard (told or not). */
  latest?: string;
  private told?: string;
  private toldAt = 0;
  private said: Promise<unknown> = Promise.resolve();
  constructor(private readonly ctx: Context) {}

  say(text: string): void {
    this.latest = text;
    if (text === this.told) return;
    if (this.told !== undefined && performance.now() - this.toldAt < RETELL_MS) return;
    this.told = text;
    this.toldAt = performance.now();
    this.said = this.said.then(() => tellRun(this.ctx, text));
  }

  async done(): Promise<void> {
    if (this.told !== undefined) this.said = this.said.then(() => tellRun(this.ctx, undefined));
    await this.said;
  }
}

/** Input tokens as the provider counts them against its limit: fresh input, cache writes and reads. */
function usageInput(usage: Usage | undefined): number {
  return usage ? usage.input + usage.cacheWrite + usage.cacheRead : 0;
}

/** Tells the attempt's run that it waits (`text`) or waits no more (undefined); never throws. */
async function tellRun(ctx: Context, text: string | undefined): Promise<void> {
  const { workflowId, runId } = ctx.info.workflowExecution!;
  try {
    await ctx.client.workflow.getHandle(workflowId, runId).signal(PROVIDER_WAIT_SIGNAL, text ? { text } : {});
  } catch {
    // the details are cosmetic: the wait goes on
  }
}

/** A signal to the key's limiter, tried three times (never throws: a lost settlement is reclaimed by its lease). */
async function signalLimiter(key: string, signal: string, arg: unknown): Promise<void> {
  const ctx = Context.current();
  await signalWithRetries(ctx.client.workflow.getHandle(limiterWorkflowId(ctx.info.taskQueue, key)), signal, arg, 250);
}

function waitHistogram(ctx: Context, key: string, ms: number): void {
  try {
    ctx.metricMeter
      .createHistogram('keel_provider_wait_ms', 'int', 'ms', 'Wait of each model request for its provider limits')
      .record(Math.round(ms), { key });
  } catch {
    // metrics are best effort
  }
}

function inUseGauge(ctx: Context, key: string, tokens: number): void {
  try {
    ctx.metricMeter
      .createGauge(
        'keel_provider_tokens_in_use',
        'int',
        'tokens',
        'Input tokens in use of a provider key (its minute bucket)',
      )
      .set(tokens, { key });
  } catch {
    // metrics are best effort
  }
}
