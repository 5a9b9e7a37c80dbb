/**
 * A finished tool call is never turned into a failure by its payload store (issue 20 item 1).
 *
 * Why: a tool result over the offload threshold is written to the payload store (S3, Keel's directory) by the SDK as
 * the activity completes. When that write fails (an S3 outage), the SDK fails the attempt; Temporal retries it (the
 * tool ledger answers, the tool does not run again) and, once the attempts run out (or at once for a non-idempotent
 * tool), the workflow records the call as failed: the model is told that a side effect that happened did not.
 *
 * Contract: for the tool activities (`runToolCall`, `executeToolCall`), once the tool has finished, this interceptor
 * writes the outcome to the worker's payload store itself, with the same driver, target and bytes the SDK will use, and
 * keeps retrying with backoff while the store fails, heartbeating (so the attempt stays alive and a cancellation reaches
 * it) and logging each failed write on the worker's logger. The attempt completes once the write succeeded; the SDK's
 * own write then finds the object there (both drivers write only what is absent; the outcome is encoded by the worker's
 * codecs first, as the SDK does). A cancellation during the wait ends
 * the attempt as cancelled (the run's documented `Operation aborted`). Bounded only by the attempt's start-to-close
 * timeout (the tool's `timeout`, default 10 minutes). Outcomes under the threshold, and workers without a store, pass
 * through untouched.
 */
import type { Context } from '@temporalio/activity';
import {
  defaultPayloadConverter,
  msToNumber,
  type ExternalStorage,
  type Payload,
  type PayloadCodec,
} from '@temporalio/common';
import type { ActivityInboundCallsInterceptor, ActivityInterceptorsFactory } from '@temporalio/worker';
import proto from '@temporalio/proto';
import type { StoreHeartbeat } from '../common/events.js';
import type { StoreRetry } from '../node-common/payload-storage.js';
import { TOOL_CALL_ACTIVITIES } from '../common/task-queues.js';

// a CommonJS module: named imports fail under plain Node ESM
const { Payload: PayloadProto } = proto.temporal.api.common.v1;

type Execute = NonNullable<ActivityInboundCallsInterceptor['execute']>;

/** The interceptor factory; `storage()` is the worker's external storage (undefined: no store, nothing to do). */
export function storeFinishedOutcomes(
  storage: () => ExternalStorage | undefined,
  retry: StoreRetry = {},
  codecs: () => PayloadCodec[] = () => [],
): ActivityInterceptorsFactory {
  const initial = msToNumber(retry.initialInterval ?? '1s');
  const maximum = msToNumber(retry.maximumInterval ?? '30s');
  return (ctx) => ({
    inbound: {
      async execute(input: Parameters<Execute>[0], next: Parameters<Execute>[1]): Promise<unknown> {
        const result = await next(input);
        const store = storage();
        if (!store || ctx.info.isLocal || !TOOL_CALL_ACTIVITIES.has(ctx.info.activityType)) return result;
        await storeDurably(ctx, store, codecs(), result, initial, maximum);
        return result;
      },
    },
  });
}

/** The SDK's storage target of an activity's payloads (worker.ts `activityStorageTarget`), so the key is the same. */
function targetOf(info: Context['info']) {
  return info.inWorkflow
    ? {
        kind: 'workflow' as const,
        namespace: info.namespace,
        id: info.workflowExecution?.workflowId,
        runId: info.workflowExecution?.runId,
        type: info.workflowType,
      }
    : {
        kind: 'activity' as const,
        namespace: info.namespace,
        id: info.activityId,
        type: info.activityType,
        runId: info.activityRunId,
      };
}

async function storeDurably(
  ctx: Context,
  storage: ExternalStorage,
  codecs: PayloadCodec[],
  result: unknown,
  initial: number,
  maximum: number,
): Promise<void> {
  // what the SDK stores: the payload after the worker's codecs (encryption: Keel's codec seals a large payload to the
  // same bytes when the SDK encodes it again, node-common/encryption.ts), so the store never holds it in clear
  let payload: Payload = defaultPayloadConverter.toPayload(result);
  for (const codec of codecs) [payload] = await codec.encode([payload]);
  // the SDK's test (the payload's protobuf size; its metadata adds well under 1 KiB to the data)
  if ((payload.data?.length ?? 0) + 1024 < storage.payloadSizeThreshold) return;
  if (PayloadProto.encode(payload).finish().length < storage.payloadSizeThreshold) return;
  const target = targetOf(ctx.info);
  const driver = storage.driverSelector({ target }, payload);
  if (!driver) return;
  const since = Date.now();
  let delay = initial;
  let details: StoreHeartbeat | undefined;
  for (let attempt = 1; ; attempt++) {
    // a write that hangs (a store that accepts connections and never answers) must not let the attempt time out
    const beating = setInterval(() => ctx.heartbeat(details), 1000);
    try {
      await driver.store({ target, abortSignal: ctx.cancellationSignal }, [payload]);
      if (attempt > 1)
        ctx.log.info(`[keel] stored the finished outcome of ${ctx.info.activityType} after ${attempt} attempts`, {
          storeAttempts: attempt,
          outageMs: Date.now() - since,
        });
      return;
    } catch (err) {
      if (ctx.cancellationSignal.aborted) await ctx.cancelled; // throws the CancelledFailure
      const lastError = describe(err);
      ctx.log.warn(
        `[keel] the tool has finished; storing its outcome in the payload store failed (attempt ${attempt}): ${lastError}; retrying in ${delay} ms`,
        { storeAttempts: attempt, driver: driver.name, lastError },
      );
      details = {
        kind: 'store',
        activity: ctx.info.activityType,
        attempts: attempt,
        lastError,
        failingSinceMs: since,
        nextAttemptInMs: delay,
      };
      ctx.heartbeat(details);
      clearInterval(beating);
      await waitOrCancelled(ctx, delay, details);
      delay = Math.min(delay * 2, maximum);
    } finally {
      clearInterval(beating);
    }
  }
}

/** Waits `ms`, heartbeating every second (a cancellation arrives with a heartbeat's answer); throws when cancelled. */
async function waitOrCancelled(ctx: Context, ms: number, details: StoreHeartbeat): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    await Promise.race([ctx.sleep(Math.min(1000, end - Date.now())), ctx.cancelled]);
    ctx.heartbeat(details);
  }
}

/** The error and its causes, one line (the S3 driver's message names bucket and key; the cause says why). */
function describe(err: unknown): string {
  const parts: string[] = [];
  for (let e: unknown = err; e !== undefined && parts.length < 4; e = (e as { cause?: unknown }).cause) {
    const text = e instanceof Error ? e.message || e.name : String(e);
    if (text && !parts.includes(text)) parts.push(text);
    if (!(e instanceof Error)) break;
  }
  return parts.join(': ').split('\n', 1)[0].slice(0, 500);
}
