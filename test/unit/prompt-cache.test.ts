/**
 * Prompt caching (issue 36 item 6) without a server: pi-ai gets the request's `sessionId` and `cacheRetention` (the
 * mock providers record what reached the wire, and report cache usage as the real APIs do), the mock's Anthropic-style
 * cache, and how cache use is shown.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { piAiProvider } from '../../activities/model/pi-ai.js';
import type { ModelRequest } from '../../activities/model/provider.js';
import { agentTool, defineAgent } from '../../activities/agents/define-agent.js';
import { batchCacheText, cacheUsageText, cachedShare } from '../../common/cache-usage.js';
import { MockPromptCache } from '../mock-providers/prompt-cache.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';

const KEY = 'sk-test-KEEL-cache-0123456789';
const never = new AbortController().signal;
const noPartial = () => {};
let mocks: MockProviderServer[] = [];

afterEach(async () => {
  await Promise.all(mocks.map((m) => m.close()));
  mocks = [];
});

async function mockOf(protocol: 'anthropic' | 'openai-responses' | 'openai-chat'): Promise<MockProviderServer> {
  const mock = await startMockProvider(protocol);
  mocks.push(mock);
  return mock;
}

function request(provider: string, modelId: string, extra: Partial<ModelRequest> = {}): ModelRequest {
  return {
    provider,
    modelId,
    systemPrompt: 'You are terse.',
    messages: [{ role: 'user', content: 'hi', timestamp: 1 }],
    tools: [],
    options: {},
    ...extra,
  };
}

describe('pi-ai gets the session id and the cache retention', () => {
  it('Anthropic: cache_control markers with the 1-hour TTL for long, none for none; cache usage read back', async () => {
    const mock = await mockOf('anthropic');
    const provider = piAiProvider({ baseUrls: { anthropic: mock.url }, apiKeys: { anthropic: KEY }, env: {} });
    const usage = { input: 10, output: 5, cacheRead: 900, cacheWrite: 40 };
    mock.enqueue(
      { reply: { blocks: [{ type: 'text', text: 'a' }], usage } },
      { reply: { blocks: [{ type: 'text', text: 'b' }] } },
    );
    const long = request('anthropic', 'claude-sonnet-4-5', { options: { cacheRetention: 'long' }, sessionId: 'run-1' });
    const message = await provider.stream(long, never, noPartial);
    expect(message.usage).toMatchObject({ input: 10, output: 5, cacheRead: 900, cacheWrite: 40 });
    expect(mock.requests[0].cache.cacheControl).toEqual(['ephemeral/1h', 'ephemeral/1h']); // system, newest message
    const none = request('anthropic', 'claude-sonnet-4-5', { options: { cacheRetention: 'none' }, sessionId: 'run-1' });
    await provider.stream(none, never, noPartial);
    expect(mock.requests[1].cache).toEqual({ cacheControl: [] });
  });

  it('OpenAI Responses: the session id is the prompt_cache_key; cached tokens are read from input_tokens_details', async () => {
    const mock = await mockOf('openai-responses');
    const provider = piAiProvider({ baseUrls: { openai: `${mock.url}/v1` }, apiKeys: { openai: KEY }, env: {} });
    mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'a' }], usage: { input: 30, output: 5, cacheRead: 70 } } });
    const message = await provider.stream(request('openai', 'gpt-5', { sessionId: 'wf-42' }), never, noPartial);
    expect(mock.requests[0].cache.promptCacheKey).toBe('wf-42');
    expect(message.usage).toMatchObject({ input: 30, cacheRead: 70 });
  });

  it('OpenAI-compatible Chat Completions: long retention sends the key and 24h retention; no session id, no key', async () => {
    const mock = await mockOf('openai-chat');
    const provider = piAiProvider({ baseUrls: { local: `${mock.url}/v1` }, apiKeys: { local: KEY }, env: {} });
    mock.enqueue(
      { reply: { blocks: [{ type: 'text', text: 'a' }], usage: { input: 30, output: 5, cacheRead: 70 } } },
      { reply: { blocks: [{ type: 'text', text: 'b' }] } },
    );
    const long = request('local', 'qwen3-8b', { options: { cacheRetention: 'long' }, sessionId: 'wf-7' });
    const message = await provider.stream(long, never, noPartial);
    expect(mock.requests[0].cache).toMatchObject({ promptCacheKey: 'wf-7', promptCacheRetention: '24h' });
    expect(message.usage).toMatchObject({ input: 30, cacheRead: 70 });
    await provider.stream(request('local', 'qwen3-8b', { options: { cacheRetention: 'long' } }), never, noPartial);
    expect(mock.requests[1].cache.promptCacheKey).toBeUndefined();
  });
});

describe("the mock's Anthropic-style prompt cache", () => {
  const body = (messages: string[]) => ({
    system: [{ type: 'text', text: 'S'.repeat(8000), cache_control: { type: 'ephemeral' } }],
    messages: messages.map((text, i) => ({
      role: i % 2 ? 'assistant' : 'user',
      content: [{ type: 'text', text, ...(i === messages.length - 1 ? { cache_control: { type: 'ephemeral' } } : {}) }],
    })),
  });

  it('writes a prefix once, then reads it; the previous breakpoint is found by the lookback', () => {
    const cache = new MockPromptCache();
    const first = cache.usage(body(['hello']));
    expect(first.cacheRead).toBe(0);
    expect(first.cacheWrite).toBeGreaterThan(2000);
    const second = cache.usage(body(['hello', 'reply', 'next']));
    expect(second.cacheRead).toBe(first.cacheWrite); // the whole first prefix, though it has no marker now
    expect(second.cacheWrite).toBeGreaterThan(0);
    expect(second.cacheWrite).toBeLessThan(50);
  });

  it('caches nothing under minTokens, and nothing without markers', () => {
    const cache = new MockPromptCache(100_000);
    expect(cache.usage(body(['hello']))).toMatchObject({ cacheRead: 0, cacheWrite: 0 });
    const plain = new MockPromptCache();
    const noMarkers = { messages: [{ role: 'user', content: 'x'.repeat(10_000) }] };
    plain.usage(noMarkers);
    const again = plain.usage(noMarkers);
    expect(again).toMatchObject({ cacheRead: 0, cacheWrite: 0 });
    expect(again.input).toBeGreaterThan(2500); // all of it uncached
  });
});

describe('how cache use is shown', () => {
  it('a run: reads, writes and the cached share of its input; nothing when there was none', () => {
    const u = { input: 100, cacheRead: 900, cacheWrite: 50 };
    expect(cachedShare(u)).toBeCloseTo(900 / 1050);
    expect(cacheUsageText(u)).toBe('cache: 900 read · 50 written (86 % of input)');
    expect(cacheUsageText({ input: 100, cacheRead: 0, cacheWrite: 0 })).toBeUndefined();
  });

  it('a batch summary', () => {
    expect(batchCacheText({ cacheRead: 1300, cacheWrite: 50 })).toBe(' · cache 1300 read · 50 written');
    expect(batchCacheText({})).toBe('');
  });
});

describe('sub-agent definitions', () => {
  const base = { name: 'helper', description: 'helps', systemPrompt: 'help', tools: [] };

  it('take fallbackModels and cacheRetention; the record carries them', () => {
    const tool = agentTool({ ...base, fallbackModels: ['openai/gpt-5'], modelOptions: { cacheRetention: 'long' } });
    expect(tool.agent).toMatchObject({ fallbackModels: ['openai/gpt-5'], modelOptions: { cacheRetention: 'long' } });
  });

  it('refuse a malformed fallbackModels or cacheRetention', () => {
    expect(() => defineAgent({ ...base, fallbackModels: ['gpt-5'] })).toThrow(
      'defineAgent(helper): fallbackModels must be an array of "provider/model-id" names',
    );
    expect(() => defineAgent({ ...base, modelOptions: { cacheRetention: 'forever' as 'long' } })).toThrow(
      'defineAgent(helper): modelOptions.cacheRetention must be one of none, short, long',
    );
  });
});
