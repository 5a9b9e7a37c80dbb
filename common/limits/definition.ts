/**
 * Provider limits (docs/provider-limits.md): what a provider key allows per minute, configured where workers are
 * (`createAgentWorker({ providerLimits })`, `keelPlugin`, `keel worker --provider-limit`, `$KEEL_PROVIDER_LIMITS`).
 * One definition per namespace and key, held by that key's limiter workflow (workflows/limits/limiter.ts).
 * Plain, deterministic code: used by the limiter workflow, the activities, the worker and the CLI.
 */

/** What one provider key (or model pattern) allows. Each field absent: not limited. */
export interface ProviderLimit {
  requestsPerMinute?: number;
  /** Input tokens per minute (what providers call ITPM; the wait text says `tokens/min`). */
  inputTokensPerMinute?: number;
  outputTokensPerMinute?: number;
  concurrentRequests?: number;
  /**
   * How many seconds' worth of each per-minute limit may be used at once: the size of the buckets. Default 60 (a
   * minute's worth, as Anthropic's token buckets); smaller for a provider that enforces over shorter periods (OpenAI
   * may enforce 60,000 requests/min as 1,000 per second: `burstSeconds: 1`).
   */
  burstSeconds?: number;
}

/**
 * Limits by key: a provider prefix (`anthropic`: every `anthropic/…` model), a model (`openai/gpt-5`) or a model
 * pattern with `*` (`anthropic/claude-haiku-*`). A model counts against the most specific key that matches it (the
 * longest), and only that one.
 */
export type ProviderLimits = Record<string, ProviderLimit>;

/** A Keel priority: 1 (first) … 5 (last), Temporal's `priorityKey` scale. */
export type Priority = 1 | 2 | 3 | 4 | 5;

/** The priority of a run started on its own (an interactive run) when its input names none. */
export const INTERACTIVE_PRIORITY: Priority = 2;
/** The priority of a batch's tasks when neither the batch nor the task names one. */
export const BATCH_PRIORITY: Priority = 4;

const FIELDS: Record<string, keyof ProviderLimit> = {
  rpm: 'requestsPerMinute',
  itpm: 'inputTokensPerMinute',
  tpm: 'inputTokensPerMinute',
  otpm: 'outputTokensPerMinute',
  concurrent: 'concurrentRequests',
  burst: 'burstSeconds',
};

/** The spec's short names, in the order `limitSpec` writes them. */
const SHORT: [keyof ProviderLimit, string][] = [
  ['requestsPerMinute', 'rpm'],
  ['inputTokensPerMinute', 'itpm'],
  ['outputTokensPerMinute', 'otpm'],
  ['concurrentRequests', 'concurrent'],
  ['burstSeconds', 'burst'],
];

/**
 * One `--provider-limit` value: `<key>:rpm=60,itpm=100000,otpm=20000,concurrent=10,burst=60` (any of them; `tpm`
 * is `itpm`). Throws an Error saying what is wrong and how to write it.
 */
export function parseLimitSpec(spec: string): [string, ProviderLimit] {
  const colon = spec.lastIndexOf(':');
  const key = colon > 0 ? spec.slice(0, colon).trim() : '';
  const how = 'write it as <provider or model pattern>:rpm=60,itpm=100000,otpm=20000,concurrent=10';
  if (!key) throw new Error(`Provider limit ${JSON.stringify(spec)} names no provider: ${how}`);
  const limit: ProviderLimit = {};
  for (const part of spec.slice(colon + 1).split(',')) {
    const [name, value] = part.split('=').map((s) => s.trim());
    const field = FIELDS[name ?? ''];
    const n = Number(value);
    if (!field || !Number.isInteger(n) || n <= 0)
      throw new Error(`Provider limit ${JSON.stringify(spec)}: ${JSON.stringify(part)} is not a limit (${how})`);
    limit[field] = n;
  }
  return [key, limit];
}

/** Several specs, separated by `;` or given as a list (`$KEEL_PROVIDER_LIMITS`, repeated flags). */
export function parseLimitSpecs(specs: string | string[]): ProviderLimits {
  const list = Array.isArray(specs) ? specs : specs.split(';');
  const out: ProviderLimits = {};
  for (const spec of list.map((s) => s.trim()).filter(Boolean)) {
    const [key, limit] = parseLimitSpec(spec);
    if (out[key]) throw new Error(`Provider limit for ${JSON.stringify(key)} is given twice; give each key once`);
    out[key] = limit;
  }
  return out;
}

/** `rpm=60,itpm=100000`: a limit as a spec writes it (also its fingerprint: one text per definition). */
export function limitSpec(limit: ProviderLimit): string {
  return SHORT.filter(([f]) => limit[f] !== undefined)
    .map(([f, s]) => `${s}=${limit[f]}`)
    .join(',');
}

/** Whether `key` (provider, model or pattern) matches `model` (`provider/model-id`). */
function matches(key: string, model: string): boolean {
  if (!key.includes('/') && !key.includes('*')) return model.startsWith(`${key}/`);
  const pattern = key
    .split('*')
    .map((s) => s.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
    .join('.*');
  return new RegExp(`^${pattern}$`).test(model);
}

/** The most specific key of `limits` matching `model`, with its limit; undefined when none does. */
export function limitFor(limits: ProviderLimits, model: string): { key: string; limit: ProviderLimit } | undefined {
  let best: string | undefined;
  for (const key of Object.keys(limits))
    if (matches(key, model) && (best === undefined || key.length > best.length)) best = key;
  return best === undefined ? undefined : { key: best, limit: limits[best] };
}

/**
 * The limiter workflow of a key: one per namespace, task queue and key (it runs on that task queue, polled by the
 * workers whose runs it serves: a limiter of one queue can never be left on a queue nobody polls).
 */
export function limiterWorkflowId(taskQueue: string, key: string): string {
  return `keel-limits:${taskQueue}:${key}`;
}

/** A priority as given (1–5), else undefined. */
export function asPriority(value: unknown): Priority | undefined {
  return value === 1 || value === 2 || value === 3 || value === 4 || value === 5 ? value : undefined;
}
