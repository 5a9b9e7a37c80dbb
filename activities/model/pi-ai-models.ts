/**
 * pi-ai's model catalog as Keel configures it: which `<provider>/<model-id>` names resolve (pi-ai's providers and
 * models, plus OpenAI-compatible servers named by a base URL), where base URLs and API keys come from (options, else
 * `KEEL_<PROVIDER>_BASE_URL` / `KEEL_<PROVIDER>_API_KEY`, else pi-ai's own environment handling), the texts for names
 * that do not resolve, and the credential check. See `pi-ai.ts` for the whole contract.
 */
import { readFileSync } from 'node:fs';
import { defaultProviderAuthContext, type Api, type Model } from '@earendil-works/pi-ai';
import { openAICompletionsApi } from '@earendil-works/pi-ai/api/openai-completions.lazy';
import { createProvider, type MutableModels } from '@earendil-works/pi-ai/models';
import { builtinModels } from '@earendil-works/pi-ai/providers/all';
import { ApplicationFailure } from '@temporalio/common';
import { emptyUsage } from '../../common/messages.js';
import type { ModelErrorDetails } from './classify-error.js';
import { ErrorType, thrownMessage } from '../../common/errors.js';

export interface PiAiProviderOptions {
  /** Base URL per provider prefix; wins over `KEEL_<PROVIDER>_BASE_URL`. */
  baseUrls?: Record<string, string>;
  /** API key per provider prefix; wins over `KEEL_<PROVIDER>_API_KEY` and pi-ai's env handling. */
  apiKeys?: Record<string, string>;
  /** Environment to read; default `process.env`. */
  env?: NodeJS.ProcessEnv;
}

/**
 * A setting from the environment: `<name>` when set and not blank, else the content of the file `<name>_FILE` names
 * (Docker and Kubernetes secrets: `ANTHROPIC_API_KEY_FILE=/run/secrets/anthropic`), without its trailing newline, read
 * at each use (a rotated file takes effect). A `_FILE` that cannot be read throws, naming the variable and the file.
 */
export function envOrFile(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name];
  if (typeof value === 'string' && value.trim() !== '') return value;
  const file = env[`${name}_FILE`];
  if (typeof file !== 'string' || file.trim() === '') return undefined;
  let text: string;
  try {
    text = readFileSync(file, 'utf-8');
  } catch (error) {
    throw new Error(
      `${name}_FILE names ${file}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}): fix the path or the file's permissions for the worker's user, or set ${name} instead`,
      { cause: error },
    );
  }
  const content = text.replace(/\r?\n$/, '');
  return content.trim() !== '' ? content : undefined;
}

const EXAMPLES = '"anthropic/claude-sonnet-4-5", "openai/gpt-5"';

/** `KEEL_<PROVIDER>_<SUFFIX>`, e.g. `KEEL_GOOGLE_VERTEX_BASE_URL`. */
export function keelEnvName(provider: string, suffix: 'BASE_URL' | 'API_KEY'): string {
  return `KEEL_${provider.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_${suffix}`;
}

/** The configured catalog of one provider instance. */
export interface PiAiCatalog {
  models: MutableModels;
  builtinProviders: Set<string>;
  /** Every API key seen or configured; redacted from messages and failures. */
  secrets: Set<string>;
  apiKeyOf(provider: string): string | undefined;
  resolve(provider: string, modelId: string): { model: Model<Api> } | { error: string };
  checkModel(name: string): string | undefined;
}

/** The model `modelId` of the OpenAI-compatible server `provider` at `baseUrl`, with settings most local servers accept. */
function compatServerModel(provider: string, modelId: string, baseUrl: string): Model<Api> {
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
    compat: {
      supportsDeveloperRole: false,
      supportsReasoningEffort: false,
      supportsStore: false,
      maxTokensField: 'max_tokens',
    },
  };
  return model as Model<Api>;
}

export function createPiAiCatalog(opts: PiAiProviderOptions = {}): PiAiCatalog {
  /** Every API key seen or configured; redacted from messages and failures. */
  const secrets = new Set<string>(Object.values(opts.apiKeys ?? {}));
  const env = opts.env ?? process.env;
  const read = (name: string): string | undefined => envOrFile(env, name);
  const defaults = defaultProviderAuthContext();
  // Whatever pi-ai's credential resolution reads (ANTHROPIC_API_KEY, OPENAI_API_KEY, …, or their `_FILE`) is a secret:
  // redacted like Keel's own key variables, whatever its name.
  const models: MutableModels = builtinModels({
    authContext: {
      env: async (name) => {
        const value = read(name);
        if (value) secrets.add(value);
        return value;
      },
      fileExists: (path) => defaults.fileExists(path),
    },
  });
  const builtinProviders = new Set(models.getProviders().map((p) => p.id));
  const compatProviders = new Map<string, string>(); // prefix -> base URL it was registered with

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
          auth: {
            apiKey: {
              name: `${provider} API key`,
              resolve: async () => ({ auth: { apiKey: apiKeyOf(provider) ?? 'keel-no-key' } }),
            },
          },
          models: [],
          api: openAICompletionsApi(),
        }),
      );
      compatProviders.set(provider, baseUrl);
    }
    return compatServerModel(provider, modelId, baseUrl);
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

  return { models, builtinProviders, secrets, apiKeyOf, resolve, checkModel };
}

/** Fails fast, non-retryably, when pi-ai finds no credentials for a provider (instead of one failed request). */
export async function checkCredentials(models: MutableModels, model: Model<Api>, provider: string): Promise<void> {
  let configured: boolean;
  let reason = '';
  try {
    configured = (await models.getAuth(model)) !== undefined;
  } catch (error) {
    configured = false;
    reason = ` (${thrownMessage(error)})`;
  }
  if (configured) return;
  throw ApplicationFailure.create({
    message: `No credentials for provider "${provider}"${reason}: set its usual environment variable (e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY), ${keelEnvName(provider, 'API_KEY')}, or the worker option apiKeys["${provider}"].`,
    type: ErrorType.ModelAuth,
    nonRetryable: true,
    details: [{ usage: emptyUsage(), provider, api: model.api, model: model.id } satisfies ModelErrorDetails],
  });
}

function unknownModelText(models: MutableModels, provider: string, modelId: string): string {
  const ids = models
    .getModels(provider)
    .map((m) => m.id)
    .sort();
  const shown = ids.slice(0, 40).join(', ');
  const more = ids.length > 40 ? ` … and ${ids.length - 40} more` : '';
  return `Unknown model "${provider}/${modelId}": pi-ai's provider "${provider}" has no model "${modelId}". Name a model as "<provider>/<model-id>", e.g. ${EXAMPLES}. Models of "${provider}": ${shown}${more}.`;
}

function unknownProviderText(providers: Set<string>, provider: string, modelId: string): string {
  return `Unknown model "${provider}/${modelId}": "${provider}" is not a pi-ai provider and no base URL is configured for it. Name a model as "<provider>/<model-id>", e.g. ${EXAMPLES}. Providers: ${[...providers].sort().join(', ')}. For an OpenAI-compatible server (Ollama, vLLM, LM Studio, …) configure its base URL on the worker (${keelEnvName(provider, 'BASE_URL')} or the baseUrls option).`;
}
