/**
 * Section 15, cache (`BENCH_ONLY=cache`): how much of a long run's input the provider's prompt cache serves (issue 36
 * item 6). One 20-turn run (a tool call a turn, then the answer) with a 2,000-token system prompt, on a Keel worker in
 * this process whose pi-ai provider talks to the mock Anthropic server (test/mock-providers), which keeps a prompt
 * cache as the API does: the prefix up to each `cache_control` marker pi-ai sets is written once and read after. Reports
 * the run's input, cache-read and cache-write tokens and the cached share of its input tokens, per cache retention
 * (`short`, the default, and `none`: no markers, nothing cached).
 */
import { randomUUID } from 'node:crypto';
import { piAiProvider } from '../activities/model/pi-ai.js';
import { defineTool } from '../activities/tools/define-tool.js';
import { AgentClient } from '../client/agent-client.js';
import { cachedShare } from '../common/cache-usage.js';
import type { Usage } from '../common/messages.js';
import { startMockProvider, type MockProviderServer } from '../test/mock-providers/server.js';
import { createAgentWorker } from '../worker/create-worker.js';
import type { Bench } from './context.js';

const TURNS = 20;
const TASK_QUEUE = 'bench-keel-cache';
/** About 2,000 tokens (characters / 4): over Anthropic's smallest cacheable prefix (1,024 for Sonnet). */
const SYSTEM_PROMPT = `You are a careful assistant. ${'Follow the house style guide to the letter. '.repeat(180)}`;

export interface CacheRunFigures {
  retention: 'short' | 'none';
  input: number;
  cacheRead: number;
  cacheWrite: number;
  /** cacheRead / (input + cacheRead + cacheWrite). */
  cachedShare: number;
}

export interface CacheResult {
  turns: number;
  runs: CacheRunFigures[];
}

const noop = defineTool({
  name: 'lookup',
  description: 'Looks a thing up',
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
  execute: async () => ({ content: [{ type: 'text', text: 'found it: a paragraph of facts about the thing' }] }),
});

/** The mock's replies of one run: a tool call a turn, then the answer. */
function script(mock: MockProviderServer): void {
  for (let t = 1; t < TURNS; t++)
    mock.enqueue({
      reply: { blocks: [{ type: 'toolCall', id: `call_${t}`, name: 'lookup', arguments: { q: `thing ${t}` } }] },
    });
  mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'All done.' }] } });
}

export async function cacheSection(b: Bench): Promise<CacheResult> {
  b.log(`cache: one ${TURNS}-turn run against the mock Anthropic provider with a prompt cache, per cache retention`);
  const mock = await startMockProvider('anthropic', { promptCache: true });
  const worker = await createAgentWorker({
    address: b.server.address,
    taskQueue: TASK_QUEUE,
    tools: [noop],
    models: {
      '*': piAiProvider({ baseUrls: { anthropic: mock.url }, apiKeys: { anthropic: 'sk-bench-cache' }, env: {} }),
    },
    workflowBundle: { codePath: b.keelBundlePath },
    identity: 'bench-cache',
  });
  const running = worker.run();
  running.catch(() => {});
  const client = await AgentClient.connect({ address: b.server.address, taskQueue: TASK_QUEUE, encryption: false });
  try {
    await worker.ready();
    const runs: CacheRunFigures[] = [];
    for (const retention of ['short', 'none'] as const) {
      script(mock);
      const h = await client.start(
        {
          prompt: 'Look up twenty things, one at a time.',
          model: 'anthropic/claude-sonnet-4-5',
          systemPrompt: SYSTEM_PROMPT,
          tools: ['lookup'],
          compaction: false,
          modelOptions: { cacheRetention: retention },
        },
        { workflowId: `bench-cache-${retention}-${randomUUID()}` },
      );
      const result = await h.result();
      if (result.status !== 'completed' || result.turns !== TURNS)
        throw new Error(`cache run (${retention}): ${result.status} after ${result.turns} turns`);
      runs.push(figures(retention, result.usage));
      const r = runs[runs.length - 1];
      b.log(
        `  ${retention}: input ${r.input}, cache read ${r.cacheRead}, cache write ${r.cacheWrite} tokens — ${(r.cachedShare * 100).toFixed(1)} % of input tokens cached`,
      );
    }
    return { turns: TURNS, runs };
  } finally {
    await worker.shutdown();
    await client.close();
    await mock.close();
  }
}

function figures(retention: 'short' | 'none', u: Usage): CacheRunFigures {
  return { retention, input: u.input, cacheRead: u.cacheRead, cacheWrite: u.cacheWrite, cachedShare: cachedShare(u) };
}
