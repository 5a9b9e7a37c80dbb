/**
 * A prompt cache as Anthropic's Messages API keeps one, for the mock server (`startMockProvider('anthropic',
 * { promptCache: true })`): a request's blocks in the API's prefix order (tools, system, messages); each block marked
 * `cache_control` is a breakpoint. The longest cached prefix that ends at a breakpoint or at one of the 20 blocks
 * before it (the API's lookback) is read (`cache_read_input_tokens`); the prefix up to the last breakpoint, when not
 * cached, is written
 * (`cache_creation_input_tokens`); `input_tokens` is the rest. Tokens are estimated as characters / 4; a prefix under
 * `minTokens` (Anthropic's 1,024 for Sonnet) is not cached. Entries never expire (a test is shorter than the TTL).
 */
import { createHash } from 'node:crypto';

export interface CacheUsage {
  input: number;
  cacheRead: number;
  cacheWrite: number;
}

/** The request's blocks in prefix order, each as its JSON without `cache_control`, and whether it is a breakpoint. */
function blocks(body: any): { json: string; breakpoint: boolean }[] {
  const out: { json: string; breakpoint: boolean }[] = [];
  const add = (block: any) => {
    const { cache_control: marker, ...rest } = (block ?? {}) as Record<string, unknown>;
    out.push({ json: JSON.stringify(rest), breakpoint: marker !== undefined });
  };
  for (const tool of body?.tools ?? []) add(tool);
  const system = body?.system;
  for (const block of typeof system === 'string' ? [{ type: 'text', text: system }] : (system ?? [])) add(block);
  for (const message of body?.messages ?? []) {
    const content = message?.content;
    for (const block of typeof content === 'string' ? [{ type: 'text', text: content }] : (content ?? []))
      add({ role: message.role, ...block });
  }
  return out;
}

/** How many blocks before a breakpoint the API looks for a cached prefix. */
const LOOKBACK_BLOCKS = 20;

export class MockPromptCache {
  private readonly cached = new Set<string>();
  constructor(private readonly minTokens = 1024) {}

  /** The usage of one request (`output` is the reply's own), and the cache written as the API would. */
  usage(body: unknown): CacheUsage {
    const hash = createHash('sha256');
    let chars = 0;
    // every block boundary's prefix: its key and tokens, and whether a breakpoint is there
    const bounds: { key: string; tokens: number; breakpoint: boolean }[] = [];
    for (const block of blocks(body)) {
      hash.update(block.json);
      chars += block.json.length;
      bounds.push({ key: hash.copy().digest('hex'), tokens: Math.ceil(chars / 4), breakpoint: block.breakpoint });
    }
    let read = 0;
    bounds.forEach((b, i) => {
      if (!b.breakpoint) return;
      for (let k = i; k >= Math.max(0, i - LOOKBACK_BLOCKS); k--)
        if (this.cached.has(bounds[k].key)) read = Math.max(read, bounds[k].tokens);
    });
    const points = bounds.filter((b) => b.breakpoint && b.tokens >= this.minTokens);
    const last = points[points.length - 1];
    const write = last && last.tokens > read ? last.tokens - read : 0;
    for (const point of points) this.cached.add(point.key);
    const total = Math.ceil(chars / 4);
    return { input: Math.max(1, total - read - write), cacheRead: read, cacheWrite: write };
  }
}

/** What a request asked of the provider's prompt cache, as the mock records it (`RecordedRequest.cache`). */
export interface RequestCacheFields {
  /** Anthropic: the `cache_control` markers, in prefix order (`ephemeral`, `ephemeral/1h`). */
  cacheControl: string[];
  /** OpenAI: `prompt_cache_key` (pi-ai sends the session id there). */
  promptCacheKey?: string;
  /** OpenAI: `prompt_cache_retention` (`24h` for `cacheRetention: 'long'`). */
  promptCacheRetention?: string;
  /** Session affinity headers pi-ai sends for some providers (`x-session-id`, `x-session-affinity`, `session_id`). */
  sessionHeader?: string;
}

export function requestCacheFields(
  body: any,
  headers: Record<string, string | string[] | undefined>,
): RequestCacheFields {
  const markers: string[] = [];
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (value && typeof value === 'object') {
      const marker = (value as { cache_control?: { type?: string; ttl?: string } }).cache_control;
      if (marker) markers.push(marker.ttl ? `${marker.type}/${marker.ttl}` : String(marker.type));
      for (const [key, inner] of Object.entries(value)) if (key !== 'cache_control') visit(inner);
    }
  };
  visit([body?.tools, body?.system, body?.messages]);
  const header = ['x-session-id', 'x-session-affinity', 'session_id', 'session-id']
    .map((name) => headers[name])
    .find((v) => typeof v === 'string');
  return {
    cacheControl: markers,
    ...(typeof body?.prompt_cache_key === 'string' ? { promptCacheKey: body.prompt_cache_key } : {}),
    ...(typeof body?.prompt_cache_retention === 'string' ? { promptCacheRetention: body.prompt_cache_retention } : {}),
    ...(typeof header === 'string' ? { sessionHeader: header } : {}),
  };
}
