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
 *
 * Registration. Register it under `*` (or under each provider prefix). `checkModel` accepts both the full
 * `provider/model-id` (what a `*` registry should pass, since the part after the prefix alone cannot name the
 * provider) and the bare model id (what a per-prefix registry passes): a bare id is accepted when some provider has a
 * model with that id, and `stream()` — which always gets `provider` and `modelId` separately — re-checks
 * authoritatively and fails with the non-retryable `ModelError.UnknownModel`.
 *
 * Streaming. Provider SDK retries are off (`maxRetries: 0`); Temporal retries, as classified by
 * `classify-error.ts`. `onPartial` gets a snapshot on every text / thinking / tool-argument delta (it carries pi-ai's
 * stopReason `pending`). The result is pi-ai's final message as plain JSON (thinking blocks and signatures kept). On
 * abort the HTTP request is aborted and the call resolves at once with stopReason `aborted`, errorMessage
 * `Request was aborted` and the content received so far. A final message with stopReason `error` is thrown as an
 * `ApplicationFailure` whose message is the provider's and whose `details[0].usage` is the attempt's usage.
 */
import {
  defaultProviderAuthContext,
  type Api,
  type AssistantMessage as PiAssistantMessage,
  type AssistantMessageEvent,
  type Context,
  type Message as PiMessage,
  type Model,
  type ProviderResponse,
  type SimpleStreamOptions,
  type ThinkingLevel,
  type Tool as PiTool,
} from '@earendil-works/pi-ai';
import { openAICompletionsApi } from '@earendil-works/pi-ai/api/openai-completions.lazy';
import { createProvider, type MutableModels } from '@earendil-works/pi-ai/models';
import { builtinModels } from '@earendil-works/pi-ai/providers/all';
import { ApplicationFailure } from '@temporalio/common';
import { emptyUsage, type AssistantMessage, type StopReason } from '../../common/messages.js';
import { classifyModelError, redactSecrets, type CapturedResponse, type ModelErrorDetails } from './classify-error.js';
import type { ModelProvider, ModelRequest } from './provider.js';

export interface PiAiProviderOptions {
  /** Base URL per provider prefix; wins over `KEEL_<PROVIDER>_BASE_URL`. */
  baseUrls?: Record<string, string>;
  /** API key per provider prefix; wins over `KEEL_<PROVIDER>_API_KEY` and pi-ai's env handling. */
  apiKeys?: Record<string, string>;
  /** Environment to read; default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/** The request and response hooks of one attempt. */
interface AttemptCapture {
  response?: CapturedResponse;
  transportError?: unknown;
}

const ABORTED_MESSAGE = 'Request was aborted';
const KEEL_STOP_REASONS = new Set<string>(['stop', 'length', 'toolUse', 'error', 'aborted']);
const DELTA_EVENTS = new Set<AssistantMessageEvent['type']>(['text_delta', 'thinking_delta', 'toolcall_delta']);
const KEY_HEADERS = ['x-api-key', 'authorization', 'api-key', 'x-goog-api-key'];
const EXAMPLES = '"anthropic/claude-sonnet-4-5", "openai/gpt-5"';

/** `KEEL_<PROVIDER>_<SUFFIX>`, e.g. `KEEL_GOOGLE_VERTEX_BASE_URL`. */
export function keelEnvName(provider: string, suffix: 'BASE_URL' | 'API_KEY'): string {
  return `KEEL_${provider.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_${suffix}`;
}

export function piAiProvider(opts: PiAiProviderOptions = {}): ModelProvider {
  const env = opts.env ?? process.env;
  const read = (name: string): string | undefined => {
    const value = env[name];
    return typeof value === 'string' && value.trim() !== '' ? value : undefined;
  };
  const defaults = defaultProviderAuthContext();
  const models: MutableModels = builtinModels({
    authContext: { env: async (name) => read(name), fileExists: (path) => defaults.fileExists(path) },
  });
  const builtinProviders = new Set(models.getProviders().map((p) => p.id));
  const compatProviders = new Map<string, string>(); // prefix -> base URL it was registered with
  /** Every API key seen or configured; redacted from messages and failures. */
  const secrets = new Set<string>(Object.values(opts.apiKeys ?? {}));

  const baseUrlOf = (provider: string) => opts.baseUrls?.[provider] ?? read(keelEnvName(provider, 'BASE_URL'));
  const apiKeyOf = (provider: string) => {
    const key = opts.apiKeys?.[provider] ?? read(keelEnvName(provider, 'API_KEY'));
    if (key) secrets.add(key);
    return key;
  };

  function compatModel(provider: string, modelId: string, baseUrl: string): Model<Api> {
    if (compatProviders.get(provider) !== baseUrl) {
      models.setProvider(
        createProvider({
          id: provider,
          name: `${provider} (OpenAI-compatible)`,
          baseUrl,
          // Local servers are often keyless; the OpenAI SDK still needs some key to send.
          auth: { apiKey: { name: `${provider} API key`, resolve: async () => ({ auth: { apiKey: apiKeyOf(provider) ?? 'keel-no-key' } }) } },
          models: [],
          api: openAICompletionsApi(),
        }),
      );
      compatProviders.set(provider, baseUrl);
    }
    const model: Model<'openai-completions'> = {
      id: modelId,
      name: `${modelId} (${provider})`,
      api: 'openai-completions',
      provider,
      baseUrl,
      reasoning: false,
      input: ['text', 'image'],
      cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 },
      contextWindow: 128_000,
      maxTokens: 16_384,
      // Conservative settings most local servers accept: `system` role, no `store` / `reasoning_effort`, `max_tokens`.
      compat: { supportsDeveloperRole: false, supportsReasoningEffort: false, supportsStore: false, maxTokensField: 'max_tokens' },
    };
    return model as Model<Api>;
  }

  function resolve(provider: string, modelId: string): { model: Model<Api> } | { error: string } {
    const baseUrl = baseUrlOf(provider);
    if (builtinProviders.has(provider)) {
      const model = models.getModel(provider, modelId);
      if (!model) return { error: unknownModelText(models, provider, modelId) };
      return { model: baseUrl ? { ...model, baseUrl } : model };
    }
    if (baseUrl) return { model: compatModel(provider, modelId, baseUrl) };
    return { error: unknownProviderText(builtinProviders, provider, modelId) };
  }

  /** Prefixes configured as OpenAI-compatible servers (a base URL for a prefix pi-ai does not know). */
  function compatPrefixesConfigured(): boolean {
    if (Object.keys(opts.baseUrls ?? {}).some((p) => !builtinProviders.has(p))) return true;
    const builtinNames = new Set([...builtinProviders].map((p) => keelEnvName(p, 'BASE_URL')));
    return Object.keys(env).some((k) => /^KEEL_.+_BASE_URL$/.test(k) && !builtinNames.has(k) && read(k) !== undefined);
  }

  function checkModel(name: string): string | undefined {
    const isBareId = () => models.getModels().some((m) => m.id === name);
    const slash = name.indexOf('/');
    if (slash > 0) {
      const provider = name.slice(0, slash);
      const modelId = name.slice(slash + 1);
      if (builtinProviders.has(provider)) {
        if (models.getModel(provider, modelId)) return undefined;
        // OpenRouter-style ids contain `/`: the whole name may be a bare id of another provider.
        return isBareId() ? undefined : unknownModelText(models, provider, modelId);
      }
      if (baseUrlOf(provider)) return undefined; // an OpenAI-compatible server serves any id
    }
    if (isBareId()) return undefined;
    // A bare id may belong to an OpenAI-compatible server; `stream()` checks again with the prefix.
    if (compatPrefixesConfigured()) return undefined;
    if (slash > 0) return unknownProviderText(builtinProviders, name.slice(0, slash), name.slice(slash + 1));
    return `Unknown model "${name}". Name a model as "<provider>/<model-id>" with a provider and model pi-ai knows, e.g. ${EXAMPLES}; or use any "<provider>/<model-id>" for an OpenAI-compatible server whose base URL the worker configures (KEEL_<PROVIDER>_BASE_URL or the baseUrls option).`;
  }

  async function stream(
    request: ModelRequest,
    signal: AbortSignal,
    onPartial: (partial: AssistantMessage) => void,
  ): Promise<AssistantMessage> {
    const found = resolve(request.provider, request.modelId);
    if ('error' in found) {
      throw ApplicationFailure.create({
        message: found.error,
        type: 'ModelError.UnknownModel',
        nonRetryable: true,
        details: [{ usage: emptyUsage() } satisfies ModelErrorDetails],
      });
    }
    const model = found.model;
    const empty = emptyMessage(model);
    if (signal.aborted) return abortedMessage(empty, secrets);

    const apiKey = builtinProviders.has(request.provider) ? apiKeyOf(request.provider) : undefined;
    if (builtinProviders.has(request.provider) && apiKey === undefined) await checkCredentials(models, model, request.provider);

    const capture: AttemptCapture = {};
    const inner = new AbortController();
    const onAbort = () => inner.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });

    const options: SimpleStreamOptions = {
      signal: inner.signal,
      maxRetries: 0,
      ...(apiKey !== undefined ? { apiKey } : {}),
      ...(opts.env ? { env: stringRecord(opts.env) } : {}),
      ...(request.options.maxTokens !== undefined ? { maxTokens: request.options.maxTokens } : {}),
      ...(request.options.temperature !== undefined ? { temperature: request.options.temperature } : {}),
      ...(request.options.reasoning && request.options.reasoning !== 'off'
        ? { reasoning: request.options.reasoning as ThinkingLevel }
        : {}),
      fetch: capturingFetch(capture, secrets),
      onResponse: (response: ProviderResponse) => {
        capture.response = { status: response.status, headers: lowerCaseKeys(response.headers) };
      },
    };
    const context: Context = {
      ...(request.systemPrompt ? { systemPrompt: request.systemPrompt } : {}),
      messages: request.messages as unknown as PiMessage[],
      ...(request.tools.length > 0
        ? { tools: request.tools.map((t): PiTool => ({ name: t.name, description: t.description, parameters: t.parameters as object })) }
        : {}),
    };

    let latest: PiAssistantMessage | undefined;
    const consume = (async () => {
      const events = models.streamSimple(model, context, options);
      const mirror = new PartialMirror();
      for await (const event of events) {
        if (event.type === 'done' || event.type === 'error') continue;
        latest = event.partial;
        mirror.apply(event);
        if (DELTA_EVENTS.has(event.type) && !signal.aborted) onPartial(mirror.snapshot(event.partial));
      }
      return events.result();
    })();
    let removeAbortWait = () => {};
    const abortWait = new Promise<'aborted'>((resolveAbort) => {
      const handler = () => resolveAbort('aborted');
      signal.addEventListener('abort', handler, { once: true });
      removeAbortWait = () => signal.removeEventListener('abort', handler);
    });

    try {
      const outcome = await Promise.race([consume, abortWait]);
      if (outcome === 'aborted' || signal.aborted) {
        consume.catch(() => {});
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
      if (signal.aborted) return abortedMessage(latest ? snapshot(latest) : empty, secrets);
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

  /** The catalog's context window (an OpenAI-compatible server's assumed 128k included). */
  function contextWindow(name: string): number | undefined {
    const slash = name.indexOf('/');
    const found = slash > 0 ? resolve(name.slice(0, slash), name.slice(slash + 1)) : undefined;
    if (found && 'model' in found) return found.model.contextWindow;
    return models.getModels().find((m) => m.id === name)?.contextWindow; // a bare id (registered under its prefix)
  }

  return { stream, checkModel, contextWindow };
}

/** Fails fast, non-retryably, when pi-ai finds no credentials for a provider (instead of one failed request). */
async function checkCredentials(models: MutableModels, model: Model<Api>, provider: string): Promise<void> {
  let configured: boolean;
  let reason = '';
  try {
    configured = (await models.getAuth(model)) !== undefined;
  } catch (error) {
    configured = false;
    reason = ` (${error instanceof Error ? error.message : String(error)})`;
  }
  if (configured) return;
  throw ApplicationFailure.create({
    message: `No credentials for provider "${provider}"${reason}: set its usual environment variable (e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY), ${keelEnvName(provider, 'API_KEY')}, or the worker option apiKeys["${provider}"].`,
    type: 'ModelError.Auth',
    nonRetryable: true,
    details: [{ usage: emptyUsage(), provider, api: model.api, model: model.id } satisfies ModelErrorDetails],
  });
}

/**
 * A `fetch` that records the status and headers of every response (pi-ai's `onResponse` fires only for successful
 * ones: the SDKs throw on an error status first), what `fetch` threw when no response came, and the API key headers
 * it sends (to redact them).
 */
function capturingFetch(capture: AttemptCapture, secrets: Set<string>): typeof globalThis.fetch {
  return async (input, init) => {
    const headers = new Headers(input instanceof Request ? input.headers : undefined);
    new Headers(init?.headers).forEach((value, key) => headers.set(key, value));
    for (const name of KEY_HEADERS) {
      const value = headers.get(name)?.replace(/^Bearer\s+/i, '').trim();
      if (value) secrets.add(value);
    }
    try {
      const response = await globalThis.fetch(input, init);
      const record: Record<string, string> = {};
      response.headers.forEach((value, key) => (record[key] = value));
      capture.response = { status: response.status, headers: record };
      capture.transportError = undefined;
      return response;
    } catch (error) {
      capture.transportError = error;
      throw error;
    }
  };
}

type Block = PiAssistantMessage['content'][number];

/**
 * The content as of the event being handled. pi-ai's `event.partial` is one live object that may already hold later
 * deltas when an event is consumed; its docs say text and thinking grow only through their `*_delta` events, so the
 * mirror rebuilds them from the deltas (tool-call arguments are copied, being parsed partial JSON).
 */
class PartialMirror {
  private readonly content: Block[] = [];

  apply(event: AssistantMessageEvent): void {
    if (event.type === 'start' || event.type === 'done' || event.type === 'error') return;
    const index = event.contentIndex;
    const live = event.partial.content[index];
    const own = this.content[index];
    switch (event.type) {
      case 'text_start':
        this.content[index] = { type: 'text', text: '' };
        break;
      case 'thinking_start':
        this.content[index] = { type: 'thinking', thinking: '' };
        break;
      case 'text_delta':
        if (own?.type === 'text') own.text += event.delta;
        break;
      case 'thinking_delta':
        if (own?.type === 'thinking') own.thinking += event.delta;
        break;
      case 'text_end':
        if (live?.type === 'text') this.content[index] = { ...live, text: event.content };
        break;
      case 'thinking_end':
        if (live?.type === 'thinking') this.content[index] = { ...live, thinking: event.content };
        break;
      case 'toolcall_start':
      case 'toolcall_delta':
        if (live?.type === 'toolCall') this.content[index] = { ...live, arguments: structuredClone(live.arguments) };
        break;
      case 'toolcall_end':
        this.content[index] = { ...event.toolCall, arguments: structuredClone(event.toolCall.arguments) };
        break;
    }
  }

  /** A Keel message of the live partial's fields with this content (stopReason is pi-ai's `pending`). */
  snapshot(live: PiAssistantMessage): AssistantMessage {
    const content = this.content.filter((b): b is Block => b !== undefined).map((b) => ({ ...b }));
    return { ...live, content, usage: { ...live.usage, cost: { ...live.usage.cost } } } as unknown as AssistantMessage;
  }
}

function emptyMessage(model: Model<Api>): PiAssistantMessage {
  return {
    role: 'assistant',
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: emptyUsage(),
    stopReason: 'aborted',
    timestamp: Date.now(),
  };
}

/** A copy of a live partial that later deltas do not change (pi-ai mutates one message object). */
function snapshot(partial: PiAssistantMessage): PiAssistantMessage {
  return {
    ...partial,
    content: partial.content.map((block) => ({ ...block })),
    usage: { ...partial.usage, cost: { ...partial.usage.cost } },
  };
}

function abortedMessage(partial: PiAssistantMessage, secrets: Set<string>): AssistantMessage {
  return toKeelMessage({ ...partial, stopReason: 'aborted', errorMessage: ABORTED_MESSAGE }, secrets);
}

/** pi-ai's message as plain JSON (fields Keel does not type are kept when they are JSON), secrets redacted. */
function toKeelMessage(message: PiAssistantMessage, secrets: Set<string>): AssistantMessage {
  const plain = JSON.parse(JSON.stringify(message)) as AssistantMessage & { stopReason: string };
  if (!KEEL_STOP_REASONS.has(plain.stopReason)) {
    plain.errorMessage = plain.errorMessage ?? `Unexpected stop reason: ${plain.stopReason}`;
    plain.stopReason = 'error';
  }
  if (plain.errorMessage !== undefined) plain.errorMessage = redactSecrets(plain.errorMessage, [...secrets]);
  return plain as AssistantMessage & { stopReason: StopReason };
}

function unknownModelText(models: MutableModels, provider: string, modelId: string): string {
  const ids = models.getModels(provider).map((m) => m.id).sort();
  const shown = ids.slice(0, 40).join(', ');
  const more = ids.length > 40 ? ` … and ${ids.length - 40} more` : '';
  return `Unknown model "${provider}/${modelId}": pi-ai's provider "${provider}" has no model "${modelId}". Name a model as "<provider>/<model-id>", e.g. ${EXAMPLES}. Models of "${provider}": ${shown}${more}.`;
}

function unknownProviderText(providers: Set<string>, provider: string, modelId: string): string {
  return `Unknown model "${provider}/${modelId}": "${provider}" is not a pi-ai provider and no base URL is configured for it. Name a model as "<provider>/<model-id>", e.g. ${EXAMPLES}. Providers: ${[...providers].sort().join(', ')}. For an OpenAI-compatible server (Ollama, vLLM, LM Studio, …) configure its base URL on the worker (${keelEnvName(provider, 'BASE_URL')} or the baseUrls option).`;
}

function lowerCaseKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k.toLowerCase(), v]));
}

function stringRecord(env: NodeJS.ProcessEnv): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, value] of Object.entries(env)) if (typeof value === 'string') out[key] = value;
  return out;
}
