/**
 * Fallback models and prompt caching (issue 36 items 5 and 6), end to end against the mock providers: the run's
 * `model` is Anthropic's protocol (`anthropic/*`), its fallback an OpenAI-compatible server (`local/*`).
 *
 * The issue's "the first provider answers 529 for 10 minutes of a batch of 100" is compressed to seconds: a batch of
 * 100 whose every request meets the outage (each run's two attempts, `modelRetry.maximumAttempts: 2`, get 529), so every
 * run must switch; 400 and 401 must not switch at all.
 */
import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { defineAgent, type AgentDefinition } from '../../activities/agents/define-agent.js';
import { piAiProvider } from '../../activities/model/pi-ai.js';
import type { AgentRunInput } from '../../common/run.js';
import type { AssistantMessage } from '../../common/messages.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';
import { startKeel, type Keel } from './harness.js';

const KEY = 'sk-test-KEEL-fallback-0123456789';
const PRIMARY = 'anthropic/claude-sonnet-4-5';
const FALLBACK = 'local/qwen3-8b';

let running: { keel: Keel; anthropic: MockProviderServer; local: MockProviderServer } | undefined;

async function setup(agents?: AgentDefinition[]): Promise<NonNullable<typeof running>> {
  const anthropic = await startMockProvider('anthropic');
  const local = await startMockProvider('openai-chat');
  const keel = await startKeel({
    ...(agents ? { agents } : {}),
    models: {
      '*': piAiProvider({
        baseUrls: { anthropic: anthropic.url, local: `${local.url}/v1` },
        apiKeys: { anthropic: KEY, local: KEY },
        env: {},
      }),
    },
  });
  running = { keel, anthropic, local };
  return running;
}

afterEach(async () => {
  if (!running) return;
  const { keel, anthropic, local } = running;
  running = undefined;
  await keel.stop();
  await Promise.all([anthropic.close(), local.close()]);
});

const task = (i: number): AgentRunInput => ({
  prompt: `task ${i}`,
  model: PRIMARY,
  fallbackModels: [FALLBACK],
  modelRetry: { maximumAttempts: 2, initialInterval: '50ms' },
});

const text = (t: string) => ({ reply: { blocks: [{ type: 'text' as const, text: t }] } });

/** The run's current details (the Temporal UI's), from the metadata query. */
async function details(h: { workflow: { query: (name: string) => Promise<unknown> } }): Promise<string> {
  const meta = (await h.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string };
  return meta.currentDetails ?? '';
}

describe('fallback models', () => {
  it('a batch whose provider is overloaded (529) completes on the fallback model, each switch recorded', async () => {
    const { keel, anthropic, local } = await setup();
    const n = 100;
    for (let i = 0; i < 2 * n; i++) anthropic.enqueue({ status: 529, message: 'Overloaded' });
    for (let i = 0; i < n; i++) local.enqueue(text('done on the fallback'));
    const batch = await keel.client.startBatch(
      Array.from({ length: n }, (_, i) => task(i)),
      { batchId: `fallback-${randomUUID()}`, concurrency: 20 },
    );
    const summary = await batch.result();
    expect(summary).toMatchObject({ total: n, done: n, failed: 0 });
    expect(anthropic.requests).toHaveLength(2 * n);
    expect(local.requests).toHaveLength(n);
    // every run checked, side by side (each query of a closed run is a replay on the worker)
    const check = async (i: number) => {
      const run = batch.task(i);
      const result = await run.result();
      expect(result.status).toBe('completed');
      const reply = result.newMessages.find((m) => m.role === 'assistant') as AssistantMessage;
      expect([reply.provider, reply.model]).toEqual(['local', 'qwen3-8b']); // who answered
      const { events } = await run.events();
      const switches = events.filter((e) => e.type === 'model_fallback');
      expect(switches).toEqual([
        expect.objectContaining({
          type: 'model_fallback',
          turn: 1,
          from: PRIMARY,
          to: FALLBACK,
          errorType: 'ModelError.Server',
          error: expect.stringContaining('Overloaded'),
        }),
      ]);
      const state = await run.state();
      expect(state.fallback).toMatch(/^turn 1: anthropic\/claude-sonnet-4-5 → local\/qwen3-8b \(ModelError\.Server: /);
      const shown = await details(run);
      expect(shown).toContain(`⚠ model fallback (1×), last at turn 1: ${PRIMARY} → ${FALLBACK}`);
      expect(shown).toMatch(/usage by model: anthropic\/claude-sonnet-4-5 \d+ tokens .*, local\/qwen3-8b 15 tokens/);
    };
    await Promise.all(Array.from({ length: n }, (_, i) => check(i)));
  });

  it('the run stays on the fallback model for its next turn', async () => {
    const { keel, anthropic, local } = await setup();
    anthropic.enqueue({ status: 529, message: 'Overloaded' }, { status: 529, message: 'Overloaded' });
    local.enqueue(text('first'), text('second'));
    const h = await keel.start({ ...task(0), mode: 'session', idleTimeout: '1m' });
    // the session waits for a follow-up after its first agent run
    await expect.poll(async () => (await h.state()).status, { timeout: 20_000 }).toBe('waiting');
    await h.followUp('again');
    await expect.poll(async () => local.requests.length, { timeout: 20_000 }).toBe(2);
    expect(anthropic.requests).toHaveLength(2); // no new attempt at the primary within the hold
    await h.end();
  });

  it("a sub-agent running the caller's model takes the caller's fallbackModels", async () => {
    const helper = defineAgent({ name: 'helper', description: 'Does a sub task', systemPrompt: 'Help.', tools: [] });
    const { keel, anthropic, local } = await setup([helper]);
    anthropic.enqueue(
      { reply: { blocks: [{ type: 'toolCall', id: 'call_1', name: 'helper', arguments: { task: 'sub task' } }] } },
      { status: 529, message: 'Overloaded' }, // the child's two attempts
      { status: 529, message: 'Overloaded' },
      text('parent done'),
    );
    local.enqueue(text('child done on the fallback'));
    const h = await keel.start({ ...task(0), tools: ['helper'] });
    const result = await h.result();
    expect(result.status).toBe('completed');
    expect(result.finalText).toBe('parent done');
    const toolResult = result.newMessages.find((m) => m.role === 'toolResult');
    expect(JSON.stringify(toolResult)).toContain('child done on the fallback');
    expect(local.requests).toHaveLength(1);
    expect((await h.events()).events.filter((e) => e.type === 'model_fallback')).toEqual([]); // the child switched
  });

  it("a batch variant's fallbackModels replace the task's", async () => {
    const { keel, anthropic, local } = await setup();
    anthropic.enqueue({ status: 529, message: 'Overloaded' }, { status: 529, message: 'Overloaded' });
    local.enqueue(text('variant on the fallback'), text('variant on the fallback'));
    const { fallbackModels: _none, ...bare } = task(0);
    const batch = await keel.client.startBatch([bare], {
      batchId: `variant-${randomUUID()}`,
      // two variants: the one with fallback models switches, the other runs the fallback model directly
      variants: [
        { name: 'fb', fallbackModels: [FALLBACK] },
        { name: 'direct', model: FALLBACK },
      ],
    });
    expect(await batch.result()).toMatchObject({ total: 2, done: 2, failed: 0 });
    expect(anthropic.requests).toHaveLength(2);
    expect(local.requests).toHaveLength(2);
  });

  it.each([
    [400, 'ModelError.BadRequest'],
    [401, 'ModelError.Auth'],
  ])('a %i makes no switch: the run fails as before', async (status) => {
    const { keel, anthropic, local } = await setup();
    anthropic.enqueue({ status, message: `refused ${status}` });
    const h = await keel.start(task(0));
    const result = await h.result(); // a failed run resolves with its result
    expect(result.status).toBe('failed');
    expect(result.error).toContain(`refused ${status}`);
    expect(anthropic.requests).toHaveLength(1); // non-retryable: one attempt
    expect(local.requests).toHaveLength(0);
    const { events } = await h.events();
    expect(events.filter((e) => e.type === 'model_fallback')).toEqual([]);
    expect((await h.state()).fallback).toBeUndefined();
  });
});

describe('prompt caching', () => {
  it('the session id and cache retention reach the provider; the details and the batch summary show the cached tokens', async () => {
    const { keel, anthropic, local } = await setup();
    const usage = { input: 100, output: 5, cacheRead: 900, cacheWrite: 50 };
    anthropic.enqueue({ reply: { blocks: [{ type: 'text', text: 'cached' }], usage } });
    local.enqueue({
      reply: { blocks: [{ type: 'text', text: 'cached too' }], usage: { input: 100, output: 5, cacheRead: 400 } },
    });
    const batchId = `cache-${randomUUID()}`;
    const batch = await keel.client.startBatch(
      [
        { prompt: 'a', model: PRIMARY, modelOptions: { cacheRetention: 'long' } },
        { prompt: 'b', model: FALLBACK, modelOptions: { cacheRetention: 'long' } },
      ],
      { batchId, concurrency: 1 },
    );
    const summary = await batch.result();
    expect(summary).toMatchObject({ done: 2, cacheRead: 1300, cacheWrite: 50 });
    // Anthropic: the 1-hour cache markers; OpenAI-compatible: the run's workflow id as prompt_cache_key
    expect(anthropic.requests[0].cache.cacheControl).toContain('ephemeral/1h');
    expect(local.requests[0].cache).toMatchObject({ promptCacheKey: `${batchId}-1`, promptCacheRetention: '24h' });
    const first = batch.task(0);
    expect((await first.result()).usage).toMatchObject({ input: 100, cacheRead: 900, cacheWrite: 50 });
    expect(await details(first)).toContain('cache: 900 read · 50 written (86 % of input)');
  });

  it("cacheRetention 'none' sends no cache markers and no session key", async () => {
    const { keel, local } = await setup();
    local.enqueue(text('plain'));
    const h = await keel.start({ prompt: 'x', model: FALLBACK, modelOptions: { cacheRetention: 'none' } });
    await h.result();
    expect(local.requests[0].cache).toEqual({ cacheControl: [] });
  });
});
