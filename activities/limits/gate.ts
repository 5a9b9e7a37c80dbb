/**
 * The activity side of provider limits (docs/provider-limits.md): each model request attempt of a run — `callModel`
 * or `compact` — whose model matches a configured key asks that key's limiter workflow for room before its provider
 * call (the `keelLimitsAsk` Update, with start the first time), waits while it is told to (asking again when told,
 * heartbeating, its run's details saying why), and settles its real usage after (`keelLimitsSettle`). A 429 / 529
 * with `retry-after` is reported to the limiter (`keelLimitsBackoff`), which holds every request of the key back.
 * No workflow command of the run changes: all of it happens inside the model activity, through the worker's client.
 */
import { Context, sleep } from '@temporalio/activity';
import { WithStartWorkflowOperation, WorkflowNotFoundError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, type Workflow } from '@temporalio/common';
import { ErrorType } from '../../common/errors.js';
import {
  INTERACTIVE_PRIORITY,
  limitFor,
  limiterWorkflowId,
  limitSpec,
  type Priority,
  type ProviderLimit,
  type ProviderLimits,
} from '../../common/limits/definition.js';
import type { LimitAnswer, LimitAsk, LimitSettle } from '../../common/limits/ledger.js';
import {
  LIMITER_WORKFLOW_TYPE,
  LIMITS_BACKOFF_SIGNAL,
  LIMITS_ASK_UPDATE,
  LIMITS_SETTLE_SIGNAL,
  PROVIDER_WAIT_SIGNAL,
  type LimiterInput,
} from '../../common/limits/protocol.js';
import type { Usage } from '../../common/messages.js';

/** How long before its `startToCloseTimeout` an attempt stops waiting (fails retryably; the next keeps its place). */
export const LIMIT_WAIT_MARGIN_MS = 120_000;
/** How long an ask is retried while the limiter cannot be reached, before the attempt fails retryably. */
const REACH_PATIENCE_MS = 120_000;

/** The worker's provider limits, asked by each model request attempt (one per worker). */
export class ProviderLimitsGate {
  private readonly warned = new Set<string>();
  constructor(readonly limits: ProviderLimits) {}

  /** The limits of one attempt of a request for `model`, or undefined when no key matches it (nothing asked). */
  forAttempt(model: string, priority: Priority | undefined): AttemptLimits | undefined {
    const found = limitFor(this.limits, model);
    return found
      ? new AttemptLimits(found.key, found.limit, priority ?? INTERACTIVE_PRIORITY, (t) => this.warnOnce(t))
      : undefined;
  }

  private warnOnce(text: string): void {
    if (this.warned.has(text)) return;
    this.warned.add(text);
    Context.current().log.warn(
      `${text}; the limiter's definition is enforced (docs/provider-limits.md: one definition per key)`,
    );
  }
}

/** One attempt's reservation with its key's limiter: acquire before the provider call, end after. */
export class AttemptLimits {
  private ask?: LimitAsk;
  private granted = false;

  constructor(
    readonly key: string,
    private readonly limit: ProviderLimit,
    private readonly priority: Priority,
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
    const deadline = Date.now() + ctx.info.startToCloseTimeoutMs;
    const ask: LimitAsk = {
      request: `${wf.workflowId}/${wf.runId}/${activityId}`,
      attempt,
      priority: this.priority,
      input: Math.ceil(input),
      outputCap,
      holdMs: ctx.info.startToCloseTimeoutMs + 60_000,
      spec: limitSpec(this.limit),
      workflowId: wf.workflowId,
    };
    this.ask = ask;
    const started = performance.now();
    let told: string | undefined;
    try {
      for (;;) {
        const answer = await this.reserve(ask);
        if (answer.conflict) this.warn(answer.conflict);
        inUseGauge(this.key, answer.inUse);
        if (answer.granted) {
          this.granted = true;
          waitHistogram(this.key, performance.now() - started);
          return;
        }
        if (answer.wait !== told) told = await tellRun(answer.wait, told);
        if (Date.now() + answer.retryInMs > deadline - LIMIT_WAIT_MARGIN_MS)
          throw ApplicationFailure.create({
            message: `This model request waited for the ${this.key} limits until its attempt's time was nearly up (${answer.wait}); the next attempt waits on in its place`,
            type: ErrorType.ProviderLimitWait,
            nextRetryDelay: '1s',
          });
        await sleep(answer.retryInMs);
      }
    } catch (err) {
      if (ctx.cancellationSignal.aborted) {
        await this.end(undefined);
        throw new CancelledFailure('Operation aborted');
      }
      throw err;
    } finally {
      if (told !== undefined) await tellRun(undefined, told);
    }
  }

  /** The attempt ended: its real usage (undefined when no provider call was made) replaces its reservation. */
  async end(usage: Usage | undefined, made = usage !== undefined): Promise<void> {
    if (!this.ask) return;
    const ask = this.ask;
    this.ask = undefined;
    const settle: LimitSettle = {
      request: ask.request,
      attempt: ask.attempt,
      ...(made ? { usage: { input: usageInput(usage), output: usage?.output ?? 0 } } : {}),
    };
    await signalLimiter(this.key, LIMITS_SETTLE_SIGNAL, settle);
  }

  /** The provider answered 429 / 529 asking to retry after `ms`: every request of the key holds back that long. */
  async backoff(ms: number): Promise<void> {
    await signalLimiter(this.key, LIMITS_BACKOFF_SIGNAL, { ms });
  }

  /** Whether room was granted (then `end` must be called). */
  get holds(): boolean {
    return this.granted;
  }

  /** One ask, starting the limiter when it does not run yet; retried while the limiter cannot be reached. */
  private async reserve(ask: LimitAsk): Promise<LimitAnswer> {
    const ctx = Context.current();
    const giveUp = Date.now() + REACH_PATIENCE_MS;
    for (let pause = 250; ; pause = Math.min(pause * 2, 5_000)) {
      try {
        const asking = this.update(ask);
        asking.catch(() => undefined);
        return await Promise.race([asking, ctx.cancelled]);
      } catch (err) {
        if (ctx.cancellationSignal.aborted) throw err;
        if (Date.now() >= giveUp)
          throw ApplicationFailure.create({
            message: `The ${this.key} limiter (workflow ${limiterWorkflowId(Context.current().info.taskQueue, this.key)}) could not be reached: ${(err as Error).message}`,
            type: ErrorType.ProviderLimitWait,
          });
      }
      await sleep(pause);
    }
  }

  /** One ask, answered at once; the key's limiter is started by the first (Update-with-start). */
  private async update(ask: LimitAsk): Promise<LimitAnswer> {
    const ctx = Context.current();
    const workflowId = limiterWorkflowId(ctx.info.taskQueue, this.key);
    try {
      return await ctx.client.workflow
        .getHandle(workflowId)
        .executeUpdate<LimitAnswer, [LimitAsk]>(LIMITS_ASK_UPDATE, { args: [ask] });
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError)) throw err;
      return ctx.client.workflow.executeUpdateWithStart<Workflow, LimitAnswer, [LimitAsk]>(LIMITS_ASK_UPDATE, {
        args: [ask],
        startWorkflowOperation: new WithStartWorkflowOperation(LIMITER_WORKFLOW_TYPE, {
          workflowId,
          taskQueue: ctx.info.taskQueue,
          workflowIdConflictPolicy: 'USE_EXISTING',
          args: [{ key: this.key, limit: this.limit } satisfies LimiterInput],
        }),
      });
    }
  }
}

/** Input tokens as the provider counts them against its limit: fresh input, cache writes and reads. */
function usageInput(usage: Usage | undefined): number {
  return usage ? usage.input + usage.cacheWrite + usage.cacheRead : 0;
}

/** Tells the attempt's run that it waits (`text`) or waits no more (undefined); never throws. Returns what was said. */
async function tellRun(text: string | undefined, before: string | undefined): Promise<string | undefined> {
  const ctx = Context.current();
  const { workflowId, runId } = ctx.info.workflowExecution!;
  try {
    await ctx.client.workflow.getHandle(workflowId, runId).signal(PROVIDER_WAIT_SIGNAL, text ? { text } : {});
    return text;
  } catch {
    return before; // the details are cosmetic: the wait goes on
  }
}

/** A signal to the key's limiter, tried three times (never throws: a lost settlement is reclaimed by its lease). */
async function signalLimiter(key: string, signal: string, arg: unknown): Promise<void> {
  const ctx = Context.current();
  const handle = ctx.client.workflow.getHandle(limiterWorkflowId(ctx.info.taskQueue, key));
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      await handle.signal(signal, arg);
      return;
    } catch {
      if (attempt < 3) await new Promise((r) => setTimeout(r, 250 * attempt));
    }
  }
}

function waitHistogram(key: string, ms: number): void {
  try {
    Context.current()
      .metricMeter.createHistogram(
        'keel_provider_wait_ms',
        'int',
        'ms',
        'Wait of each model request for its provider limits',
      )
      .record(Math.round(ms), { key });
  } catch {
    // metrics are best effort
  }
}

function inUseGauge(key: string, tokens: number): void {
  try {
    Context.current()
      .metricMeter.createGauge(
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
