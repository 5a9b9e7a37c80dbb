/**
 * `piAiProvider()`: a Keel `ModelProvider` for every provider and model `@earendil-works/pi-ai` knows
 * (`anthropic/claude-sonnet-4-5`, `openai/gpt-5`, `google/…`, `openrouter/…`, …), plus OpenAI-compatible servers
 * (Ollama, vLLM, LM Studio, llama.cpp) named by a base URL.
 *
 * Model names. A run's model is `<provider>/<model-id>`; `<provider>` is a pi-ai provider id and `<model-id>` one of
 * its catalog ids (the id may itself contain `/`, as OpenRouter's do). Any other `<provider>` works when a base URL is
 * configured for it: it is then an OpenAI-compatible Chat Completions server and every model id is passed through,
 * e.g. `ollama/llama3.1` with `KEEL_OLLAMA_BASE_URL=http://localhost:11434/v1`.
 *
 * Configuration comes only from the worker (options, else environment) — never from the request:
 * - base URL: `opts.baseUrls[provider]`, else `KEEL_<PROVIDER>_BASE_URL` (provider upper-cased, non-alphanumerics
 *   as `_`: `KEEL_ANTHROPIC_BASE_URL`, `KEEL_GOOGLE_VERTEX_BASE_URL`). It replaces the catalog URL of that provider's
 *   models (Anthropic: without `/v1`; OpenAI and OpenAI-compatible servers: with `/v1`).
 * - API key: `opts.apiKeys[provider]`, else `KEEL_<PROVIDER>_API_KEY`, else pi-ai's own resolution from the same
 *   environment (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, `GEMINI_API_KEY`, …, see pi-ai's README). OpenAI-compatible
 *   servers may be keyless.
 * - `opts.env` replaces `process.env` for all of the above (tests pass their own).
 * - Every key read this way (whatever its variable) or sent in a key header is redacted from the call's messages and
 *   failures (`classify-error.ts` `redactSecrets`).
 *
 * Registration. Register it under `*` (or under each provider prefix). `checkModel` accepts both the full
 * `provider/model-id` (what a `*` registry should pass, since the part after the prefix alone cannot name the
 * provider) and the bare model id (what a per-prefix registry passes): a bare id is accepted when some provider has a
 * model with that id, and `stream()` — which always gets `provider` and `modelId` separately — re-checks
 * authoritatively and fails with the non-retryable `ModelError.UnknownModel`.
 *
 * Streaming. Provider SDK retries are off (`maxRetries: 0`); Temporal retries, as classified by
 * `classify-error.ts`. `onPartial` gets a snapshot on every text / thinking / tool-argument delta (it carries pi-ai's
 * stopReason `pending`; a tool call's `arguments` in it are the JSON text received so far) and what the delta added. The result is pi-ai's final message as plain JSON (thinking blocks and signatures kept). On
 * abort the HTTP request is aborted and the call resolves at once with stopReason `aborted`, errorMessage
 * `Request was aborted` and the content received so far. A final message with stopReason `error` is thrown as an
 * `ApplicationFailure` whose message is the provider's and whose `details[0].usage` is the attempt's usage.
 */
import type {
  AssistantMessageEvent,
  Context,
  Message as PiMessage,
  AssistantMessage as PiAssistantMessage,
  ProviderResponse,
  SimpleStreamOptions,
  ThinkingLevel,
  Tool as PiTool,
} from '@earendil-works/pi-ai';
import { ApplicationFailure } from '@temporalio/common';
import { emptyUsage, type AssistantMessage } from '../../common/messages.js';
import { classifyModelError, type ModelErrorDetails } from './classify-error.js';
import { BODY_YIELD_AFTER_MS, capturingFetch, lowerCaseKeys, type AttemptCapture } from './pi-ai-fetch.js';
import { PartialMirror, abortedMessage, emptyMessage, snapshot, toKeelMessage } from './pi-ai-messages.js';
import { checkCredentials, createPiAiCatalog, type PiAiCatalog, type PiAiProviderOptions } from './pi-ai-models.js';
import { REPLY_TOO_LARGE, type ModelProvider, type ModelRequest, type PartialGrowth } from './provider.js';
import { ErrorType } from '../../common/errors.js';

export { keelEnvName } from './pi-ai-models.js';
export type { PiAiProviderOptions } from './pi-ai-models.js';

const DELTA_EVENTS = new Set<AssistantMessageEvent['type']>(['text_delta', 'thinking_delta', 'toolcall_delta']);

export function piAiProvider(opts: PiAiProviderOptions = {}): ModelProvider {
  const { models, builtinProviders, secrets, apiKeyOf, resolve, checkModel } = createPiAiCatalog(opts);

  async function stream(
    request: ModelRequest,
    signal: AbortSignal,
    onPartial: (partial: AssistantMessage, grew?: PartialGrowth) => void,
  ): Promise<AssistantMessage> {
    const found = resolve(request.provider, request.modelId);
    if ('error' in found) {
      throw ApplicationFailure.create({
        message: found.error,
        type: ErrorType.ModelUnknownModel,
        nonRetryable: true,
        details: [{ usage: emptyUsage() } satisfies ModelErrorDetails],
      });
    }
    const model = found.model;
    const empty = emptyMessage(model);
    if (signal.aborted) return abortedMessage(empty, secrets);

    const apiKey = builtinProviders.has(request.provider) ? apiKeyOf(request.provider) : undefined;
    if (builtinProviders.has(request.provider) && apiKey === undefined)
      await checkCredentials(models, model, request.provider);

    const capture: AttemptCapture = {};
    const inner = new AbortController();
    const onAbort = () => inner.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });

    const options = streamOptions(request, opts, apiKey, inner.signal, capture, secrets);
    const context = piContext(request);

    let latest: PiAssistantMessage | undefined;
    const consume = (async () => {
      const events = models.streamSimple(model, context, options);
      const mirror = new PartialMirror();
      let since = performance.now();
      for await (const event of events) {
        if (event.type === 'done' || event.type === 'error') continue;
        latest = event.partial;
        const grew = mirror.apply(event);
        if (DELTA_EVENTS.has(event.type) && !signal.aborted) onPartial(mirror.snapshot(event.partial), grew);
        // events queued faster than they are handled are handled in one chain of promise callbacks: give the event
        // loop a turn now and then (as the body does, pi-ai-fetch.ts), so a long reply does not hold up the worker
        if (performance.now() - since > BODY_YIELD_AFTER_MS) {
          await new Promise((resolve) => setImmediate(resolve));
          since = performance.now();
        }
      }
      return events.result();
    })();
    const { aborted: abortWait, remove: removeAbortWait } = abortWaiter(signal);

    try {
      const outcome = await Promise.race([consume, abortWait]);
      if (outcome === 'aborted' || signal.aborted) {
        consume.catch(() => {});
        // a reply stopped for its size is not recorded: no need to copy what it streamed
        if (signal.reason === REPLY_TOO_LARGE) return abortedMessage(empty, secrets);
        return abortedMessage(latest ? snapshot(latest) : empty, secrets);
      }
      const final = toKeelMessage(outcome, secrets);
      if (final.stopReason === 'error') {
        throw classifyModelError({
          message: final,
          response: capture.response,
          transportError: capture.transportError,
          secrets: [...secrets],
          contextWindow: model.contextWindow,
        });
      }
      return final;
    } catch (error) {
      if (error instanceof ApplicationFailure) throw error;
      if (signal.aborted)
        return abortedMessage(latest && signal.reason !== REPLY_TOO_LARGE ? snapshot(latest) : empty, secrets);
      throw classifyModelError({
        error,
        response: capture.response,
        transportError: capture.transportError,
        secrets: [...secrets],
      });
    } finally {
      removeAbortWait();
      signal.removeEventListener('abort', onAbort);
      if (!inner.signal.aborted) inner.abort(); // no-op after a finished request; closes it otherwise
    }
  }

  const contextWindow = (name: string) => contextWindowOf(models, resolve, name);

  return { stream, checkModel, contextWindow };
}

function stringRecord(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === 'string') out[key] = value;
  return out;
}

/** pi-ai's options for one request: no retries of its own (Temporal retries), the key, the request's settings. */
function streamOptions(
  request: ModelRequest,
  opts: PiAiProviderOptions,
  apiKey: string | undefined,
  signal: AbortSignal,
  capture: AttemptCapture,
  secrets: Set<string>,
): SimpleStreamOptions {
  return {
    signal,
    maxRetries: 0,
    ...(apiKey !== undefined ? { apiKey } : {}),
    ...(opts.env ? { env: stringRecord(opts.env) } : {}),
    ...(request.options.maxTokens !== undefined ? { maxTokens: request.options.maxTokens } : {}),
    ...(request.options.temperature !== undefined ? { temperature: request.options.temperature } : {}),
    ...(request.options.reasoning && request.options.reasoning !== 'off'
      ? { reasoning: request.options.reasoning as ThinkingLevel }
      : {}),
    ...cacheOptions(request),
    fetch: capturingFetch(capture, secrets),
    onResponse: (response: ProviderResponse) => {
      capture.response = { status: response.status, headers: lowerCaseKeys(response.headers) };
    },
  };
}

/**
 * pi-ai's prompt-cache options of a request: the conversation's `sessionId` (OpenAI's `prompt_cache_key`, session
 * affinity headers, Anthropic's message threads) and the run's `cacheRetention` (Anthropic's `cache_control` TTL,
 * OpenAI's `prompt_cache_retention`); `none` sends neither (pi-ai drops the session id then too).
 */
function cacheOptions(request: ModelRequest): Pick<SimpleStreamOptions, 'sessionId' | 'cacheRetention'> {
  const retention = request.options.cacheRetention;
  return {
    ...(request.sessionId !== undefined && retention !== 'none' ? { sessionId: request.sessionId } : {}),
    ...(retention !== undefined ? { cacheRetention: retention } : {}),
  };
}

/** pi-ai's context of a request: system prompt, messages and tools. */
function piContext(request: ModelRequest): Context {
  return {
    ...(request.systemPrompt ? { systemPrompt: request.systemPrompt } : {}),
    messages: request.messages as unknown as PiMessage[],
    ...(request.tools.length > 0
      ? {
          tools: request.tools.map((t): PiTool => ({
            name: t.name,
            description: t.description,
            parameters: t.parameters as object,
          })),
        }
      : {}),
  };
}

/** A promise that resolves `'aborted'` when `signal` aborts, and how to stop listening. */
function abortWaiter(signal: AbortSignal): { aborted: Promise<'aborted'>; remove: () => void } {
  let remove = () => {};
  const aborted = new Promise<'aborted'>((resolveAbort) => {
    const handler = () => resolveAbort('aborted');
    signal.addEventListener('abort', handler, { once: true });
    remove = () => signal.removeEventListener('abort', handler);
  });
  return { aborted, remove };
}

/** The catalog's context window (an OpenAI-compatible server's assumed 128k included). */
function contextWindowOf(
  models: PiAiCatalog['models'],
  resolve: PiAiCatalog['resolve'],
  name: string,
): number | undefined {
  const slash = name.indexOf('/');
  const found = slash > 0 ? resolve(name.slice(0, slash), name.slice(slash + 1)) : undefined;
  if (found && 'model' in found) return found.model.contextWindow;
  return models.getModels().find((m) => m.id === name)?.contextWindow; // a bare id (registered under its prefix)
}
