import { Context } from '@temporalio/activity';
import { ApplicationFailure, TemporalFailure } from '@temporalio/common';
import { heartbeatUsage, type ModelHeartbeat } from '../../common/events.js';
import { ErrorType, MAX_REPLY_SIZE, replyTooLarge } from '../../common/errors.js';
import { addUsage, emptyUsage, toolCallsOf, type AssistantMessage, type Usage } from '../../common/messages.js';
import { modelContext } from '../../common/compaction.js';
import { MODEL_HEARTBEAT_VERSION, modelHeartbeat } from '../../common/model-heartbeat.js';
import { STREAM_HEARTBEAT_MS, type DeltaRecorder, type PartialGrowth } from '../../common/stream.js';
import type { FleetStreamStore } from '../../node-common/fleet-stream/store.js';
import { openDeltaLog } from './fleet-appender.js';
import type { CallModelInput, CallModelResult } from '../../common/wire.js';
import type { AgentHooks } from '../hooks.js';
import { startHeartbeat } from '../heartbeat.js';
import { parametersSchema, type ToolDefinition } from '../tools/define-tool.js';
import type { TranscriptCache } from '../transcript.js';
import { assistantMessageErrors } from '../../common/validate-messages.js';
import { isProgrammingError, programmingErrorFailure, type ModelErrorDetails } from './classify-error.js';
import { REPLY_TOO_LARGE, type ModelProvider, type ModelRegistry } from './provider.js';
import type { ToolLookup } from '../tools/tool-lookup.js';
import type { BudgetClaim, TreeBudgetRef } from '../../common/tree/budget.js';
import { attemptKey, reserveFromRoot, settleWithRoot } from '../agents/tree-reserve.js';
import type { AttemptLimits, ProviderLimitsGate } from '../limits/gate.js';
import { limitedAttemptEnd } from '../limits/attempt.js';
import { estimateRequest } from '../limits/estimate.js';

export interface CallModelDeps {
  models: ModelRegistry;
  /** The tools a run names: own, MCP, recorded sub-agents (activities/tools/tool-lookup.ts). */
  tools: ToolLookup;
  hooks: AgentHooks;
  transcript: TranscriptCache;
  /** The worker's provider limits (docs/provider-limits.md), when it has any. */
  limits?: ProviderLimitsGate;
  /** The fleet stream transport's store (docs/live-output.md#fleet-transport), when the worker has one. */
  fleet?: FleetStreamStore;
}

/**
 * The provider serving `provider/model-id`: its own entry (given the id after the prefix), else `*` (given the whole
 * `provider/model-id`, since it serves many prefixes).
 */
export function providerFor(
  models: ModelRegistry,
  model: string,
): { provider?: ModelProvider; prefix: string; modelId: string; checkId: string } {
  const slash = model.indexOf('/');
  const prefix = model.slice(0, slash);
  const modelId = model.slice(slash + 1);
  if (models[prefix]) return { provider: models[prefix], prefix, modelId, checkId: modelId };
  return { provider: models['*'], prefix, modelId, checkId: model };
}

/**
 * The failure to throw for a failed attempt: its `details[0].usage` becomes the sum of every failed attempt so far,
 * this one included (the workflow adds it to the run's usage when this is the last attempt). This attempt's usage is
 * what its failure reports in `details[0].usage` (a provider's `ApplicationFailure`), else the usage it last streamed
 * (`streamed`: a provider that throws a plain error mid-stream). Cancellations and Temporal failures other than
 * `ApplicationFailure` pass through unchanged; a plain error is wrapped (same message, type = its name, retryable, as
 * Temporal would convert it) only when there is usage to carry.
 */
function withFailedUsage(
  err: unknown,
  prior: Usage | undefined,
  streamed: Usage | undefined,
): { error: unknown; total?: Usage } {
  const sum = (own: Usage | undefined) => (prior ? addUsage(prior, own) : own);
  if (err instanceof ApplicationFailure) {
    const [first, ...rest] = err.details ?? [];
    const isDetail = first !== null && typeof first === 'object' && !Array.isArray(first);
    const detail = isDetail ? (first as { usage?: Usage }) : {};
    if (!prior && (detail.usage || !streamed)) return { error: err, total: detail.usage };
    const total = sum(detail.usage ?? streamed);
    const failure = new ApplicationFailure(
      err.message,
      err.type,
      err.nonRetryable,
      [{ ...detail, usage: total }, ...(isDetail || first === undefined ? [] : [first]), ...rest],
      err.cause,
      err.nextRetryDelay,
      err.category,
    );
    if (err.stack) failure.stack = err.stack;
    return { error: failure, total };
  }
  if (!(err instanceof Error) || err instanceof TemporalFailure) return { error: err, total: prior };
  const total = sum(streamed);
  if (!total) return { error: err };
  return {
    error: ApplicationFailure.create({
      message: err.message,
      type: err.name,
      nonRetryable: false,
      cause: err,
      details: [{ usage: total }],
    }),
    total,
  };
}

/** The usage of this failed attempt alone: what its failure reports in `details[0].usage`, else what it streamed. */
function attemptUsage(err: unknown, streamed: Usage | undefined): Usage | undefined {
  const first = err instanceof ApplicationFailure ? (err.details?.[0] as { usage?: Usage } | undefined) : undefined;
  return first && typeof first === 'object' && first.usage ? first.usage : streamed;
}

/** Which limit the failed attempts' usage reached (a crash loop must not spend past the budget), if any. */
function overBudget(prior: Usage, left: NonNullable<CallModelInput['budgetLeft']>): string | undefined {
  if (left.tokens !== undefined && prior.totalTokens >= left.tokens)
    return `${prior.totalTokens} tokens of the ${left.tokens} left`;
  if (left.costUsd !== undefined && prior.cost.total >= left.costUsd)
    return `${prior.cost.total} USD of the ${left.costUsd} left`;
  return undefined;
}

/** Each tool call's activity summary from its tool's `summary(args)`; a throwing or missing `summary` is skipped. */
function toolSummaries(
  tools: Map<string, ToolDefinition>,
  message: AssistantMessage,
): { toolSummaries?: Record<string, string> } {
  const out: Record<string, string> = {};
  for (const c of toolCallsOf(message)) {
    try {
      const text = tools.get(c.name)?.summary?.(c.arguments);
      if (text) out[c.id] = text.split('\n', 1)[0].slice(0, 200);
    } catch {
      // a summary is cosmetic; the workflow falls back to a generic one
    }
  }
  return Object.keys(out).length ? { toolSummaries: out } : {};
}

/**
 * Fails the attempt, non-retryably, when the provider's message is not a well-formed assistant message (e.g.
 * `usage.cost.total` a string): the workflow would otherwise crash on it. Not normalised: wrong types are a provider
 * bug that a retry repeats, and guessing numbers would make the run's usage silently wrong; the error names each field.
 */
function checkResponse(message: unknown): asserts message is AssistantMessage {
  const errors = assistantMessageErrors(message);
  if (errors.length === 0) return;
  throw ApplicationFailure.create({
    message: `The model provider returned an invalid assistant message: ${errors.join('; ')}`,
    type: ErrorType.ModelInvalidResponse,
    nonRetryable: true,
    details: [{ usage: emptyUsage() } satisfies ModelErrorDetails],
  });
}

/** What a reply over {@link MAX_REPLY_SIZE} is refused with (non-retryable: the same request gives the same reply). */
function tooLargeFailure(what: string, usage: Usage | undefined): ApplicationFailure {
  return ApplicationFailure.create({
    message: replyTooLarge(what),
    type: ErrorType.ModelResponseTooLarge,
    nonRetryable: true,
    details: [{ usage: usage ?? emptyUsage() } satisfies ModelErrorDetails],
  });
}

/** The part of a streamed reply that took it over the limit (its largest block), as the refusal names it. */
function largestPart(partial: AssistantMessage, recorder: DeltaRecorder): string {
  const block = partial.content[recorder.largestBlock().block];
  const part =
    block?.type === 'toolCall'
      ? `the arguments of tool call ${JSON.stringify(block.name)}`
      : block?.type === 'thinking'
        ? 'its thinking'
        : 'its text';
  return `${part} passed ${thousands(MAX_REPLY_SIZE)} characters`;
}

/** A streamed reply this long is finished in steps, each after a turn of the event loop (each step costs O(reply)). */
const LARGE_REPLY_CHARS = 256 * 1024;

const loopTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A reply that was not refused while streaming is still refused when its message is over the limit as JSON. */
function checkReplySize(message: AssistantMessage): void {
  // a UTF-16 unit is at most 3 bytes of UTF-8: a short JSON text needs no byte count
  const json = JSON.stringify(message);
  if (json.length <= MAX_REPLY_SIZE / 3) return;
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_REPLY_SIZE) throw tooLargeFailure(`the message is ${thousands(bytes)} bytes of JSON`, message.usage);
}

/** `2000000` as `2,000,000` (without Intl, whose first use loads locale data for tens of ms). */
function thousands(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+$)/g, ',');
}

/**
 * One attempt of a model request with Keel's usage accounting (shared by `callModel` and `compact`): the earlier
 * attempts' usage is read from the heartbeat details (lost attempts included) and heartbeated on with every snapshot
 * (a bounded detail, common/model-heartbeat.ts);
 * a failure carries the sum in its `details[0].usage`. When the earlier attempts spent `budgetLeft`, the attempt fails
 * at once (non-retryable `BudgetExceeded`) without calling the provider. In a tree (`tree`), the attempt reserves
 * its worst case from the root first (refused: non-retryable `TreeBudgetExceeded`) and settles its real usage after,
 * whether it succeeded or failed (activities/agents/tree-reserve.ts). Under provider limits (`limits`, docs/provider-limits.md)
 * the request closure acquires room before its provider call; the attempt's real usage is settled here after, and a
 * 429 / 529 with `retry-after` holds back every request of the key (activities/limits/attempt.ts).
 *
 * A reply over {@link MAX_REPLY_SIZE} is refused (non-retryable `ModelError.ResponseTooLarge`): a streamed one as soon
 * as its blocks pass that many characters (the request is aborted through the signal the provider was given), any
 * other when its final message is over that many bytes of JSON. Each snapshot costs O(blocks + delta) here when the
 * provider says how it grew (common/stream.ts `PartialGrowth`).
 */
export async function accountedAttempt(
  budgetLeft: CallModelInput['budgetLeft'],
  request: (
    onPartial: (partial: AssistantMessage, grew?: PartialGrowth) => void,
    signal: AbortSignal,
  ) => Promise<AssistantMessage>,
  stream?: { messageIndex: number; fleet?: FleetStreamStore },
  tree?: TreeBudgetRef,
  limits?: AttemptLimits,
): Promise<{ message: AssistantMessage; prior?: Usage; large?: true }> {
  const ctx = Context.current();
  const prior = heartbeatUsage(ctx.info.heartbeatDetails);
  const carried = prior ? { failedUsage: prior } : {};
  // the call's delta log (common/stream.ts): numbered on from what the earlier attempts reached
  const { recorder, appender } = stream ? await openDeltaLog(ctx, stream) : {};
  const initial =
    prior || (recorder && ctx.info.attempt > 1)
      ? ({
          kind: 'model',
          v: MODEL_HEARTBEAT_VERSION,
          ...carried,
          ...(recorder ? { deltas: recorder.detail() } : {}),
        } satisfies ModelHeartbeat)
      : undefined;
  const heartbeat = startHeartbeat(ctx, initial, recorder ? STREAM_HEARTBEAT_MS : undefined);
  // the usage this attempt last streamed: counted when it then throws without reporting its own
  let streamed: Usage | undefined;
  let claim: BudgetClaim | undefined;
  // the provider's signal: the activity's cancellation, or a reply over the size limit (`tooLarge` says which part)
  const stop = new AbortController();
  const cancelled = () => stop.abort(ctx.cancellationSignal.reason);
  if (ctx.cancellationSignal.aborted) cancelled();
  else ctx.cancellationSignal.addEventListener('abort', cancelled, { once: true });
  let tooLarge: string | undefined;
  // Everything that can fail is inside: a failure of the last attempt must still carry the earlier attempts' usage.
  try {
    const over = prior && budgetLeft ? overBudget(prior, budgetLeft) : undefined;
    if (over)
      throw ApplicationFailure.nonRetryable(
        `Budget exceeded by the failed attempts of this call: ${over}`,
        ErrorType.BudgetExceeded,
      );
    if (tree) claim = await reserveFromRoot(tree, attemptKey(ctx));
    const at = { attempt: ctx.info.attempt, seq: 0, ...carried };
    const message = await request((partial, grew) => {
      if (tooLarge !== undefined) return; // stopped: what the provider still sends is not recorded
      at.seq += 1;
      streamed = partial.usage;
      recorder?.snapshot(partial, grew);
      appender?.onSnapshot();
      if (recorder && recorder.streamedChars > MAX_REPLY_SIZE) {
        tooLarge = largestPart(partial, recorder);
        stop.abort(REPLY_TOO_LARGE);
        return;
      }
      // built only when sent
      heartbeat.update(() => modelHeartbeat(partial, recorder ? { ...at, deltas: recorder.detail() } : at));
    }, stop.signal).catch((error: unknown) => {
      if (tooLarge === undefined) throw error;
      return undefined; // a provider that threw on the abort: the refusal says why
    });
    if (tooLarge !== undefined) throw tooLargeFailure(tooLarge, streamed);
    // the checks below and the result's serialisation each take O(reply): a large reply gives the loop a turn first
    const large = (recorder?.streamedChars ?? 0) > LARGE_REPLY_CHARS;
    if (large) await loopTurn();
    checkResponse(message);
    checkReplySize(message);
    if (large) await loopTurn();
    heartbeat.stop();
    appender?.close(true);
    if (claim) await settleWithRoot(tree!, claim, message.usage);
    await limits?.end(message.usage);
    return { message, ...(prior ? { prior } : {}), ...(large ? { large } : {}) };
  } catch (thrown) {
    heartbeat.stop();
    appender?.close(false);
    // A bug fails the same way on every attempt: never retried (a provider's TypeError, a hook's ReferenceError).
    const err = isProgrammingError(thrown) ? programmingErrorFailure(thrown, streamed) : thrown;
    const { error, total } = withFailedUsage(err, prior, streamed);
    if (claim) await settleWithRoot(tree!, claim, attemptUsage(err, streamed));
    if (limits) await limitedAttemptEnd(limits, err, attemptUsage(err, streamed));
    // The next attempt reads this (the SDK flushes the last heartbeat of a failing activity before failing it).
    if (total || recorder)
      ctx.heartbeat({
        kind: 'model',
        v: MODEL_HEARTBEAT_VERSION,
        ...(total ? { failedUsage: total } : {}),
        ...(recorder ? { deltas: { messageIndex: stream!.messageIndex, end: recorder.next, items: [] } } : {}),
      } satisfies ModelHeartbeat);
    throw error;
  } finally {
    ctx.cancellationSignal.removeEventListener('abort', cancelled);
  }
}

/** The provider of `model`, or a non-retryable `ModelError.NotFound`. */
export function requireProvider(
  models: ModelRegistry,
  model: string,
): { provider: ModelProvider; prefix: string; modelId: string } {
  const { provider, prefix, modelId } = providerFor(models, model);
  if (!provider)
    throw ApplicationFailure.nonRetryable(
      `No model provider for "${model}" on this worker (providers: ${Object.keys(models).join(', ')})`,
      ErrorType.ModelNotFound,
    );
  return { provider, prefix, modelId };
}

/**
 * Activity `callModel`: reads transcript[0, messageCount) by reference, projects it through the last compaction
 * (common/compaction.ts `modelContext`), applies `transformContext`, streams the provider's answer with the streamed
 * text's length and tail heartbeated (≤ 4/s), and returns the final message only. The usage of earlier failed attempts comes back as
 * `failedAttemptsUsage` (or, when this attempt fails too, in the failure's `details[0].usage`, summed with this
 * attempt's); see `accountedAttempt`.
 */
export function createCallModel(deps: CallModelDeps) {
  return async function callModel(input: CallModelInput): Promise<CallModelResult> {
    const limits = deps.limits?.forAttempt(input.model, input.priority);
    const { message, prior, large } = await accountedAttempt(
      input.budgetLeft,
      async (onPartial, signal) => {
        const { provider, prefix, modelId } = requireProvider(deps.models, input.model);
        let messages = modelContext(
          await deps.transcript.messages(input.run, input.messageCount, input.digest, input.tail),
        );
        if (deps.hooks.transformContext) {
          messages = await deps.hooks.transformContext(messages, signal, {
            workflowId: input.run.workflowId,
            model: input.model,
            turn: input.turn,
          });
        }
        const found = await Promise.all(input.tools.map((name) => deps.tools.tool(input.run.workflowId, name)));
        const tools = found.flatMap((t) =>
          t ? [{ name: t.name, description: t.description, parameters: parametersSchema(t.parameters) }] : [],
        );
        const { sessionId: sessionKey, ...options } = input.options;
        if (limits) await limits.acquire(...estimateRequest(messages, input.systemPrompt, tools, input.options));
        return provider.stream(
          {
            provider: prefix,
            modelId,
            systemPrompt: input.systemPrompt,
            messages,
            tools,
            options,
            // the conversation's prompt-cache key: the same on every attempt, turn and continued run (a fork: its original's)
            sessionId: sessionKey ?? input.run.workflowId,
          },
          signal,
          onPartial,
        );
      },
      { messageIndex: input.messageCount, ...(deps.fleet ? { fleet: deps.fleet } : {}) },
      input.treeBudget,
      limits,
    );
    // the workflow appends it at messageCount; the tool activities and the next call read it from here
    deps.transcript.remember(input.run, input.messageCount, message);
    if (large) await loopTurn(); // then Temporal serialises the result: O(reply) again
    const named = new Map(deps.tools.own);
    for (const c of toolCallsOf(message))
      if (!named.has(c.name)) {
        const t = await deps.tools.mcpTool(input.run.workflowId, c.name);
        if (t) named.set(c.name, t);
      }
    return { message, ...(prior ? { failedAttemptsUsage: prior } : {}), ...toolSummaries(named, message) };
  };
}
