/**
 * Context compaction (README "Compaction") with the scripted model and a small configured window: what the model
 * receives after compaction (the summary, then the kept tail), the summary request, the update of an earlier summary,
 * `messages` returning every message with the compaction entries in place; a context-overflow error → compact →
 * one retry.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { scriptedModel, type Script } from '../../activities/model/scripted.js';
import type { ModelProvider, ModelRequest } from '../../activities/model/provider.js';
import {
  COMPACTION_SUMMARY_PREFIX,
  COMPACTION_SUMMARY_SUFFIX,
  SUMMARY_PROMPT,
  SUMMARY_SYSTEM_PROMPT,
  UPDATE_SUMMARY_PROMPT,
} from '../../common/compaction.js';
import type { Message } from '../../common/messages.js';
import { allEvents, startKeel, strip, type Keel } from './harness.js';

let produced = 0;
/** Tool results of 1200 characters (300 estimated tokens): `<n>:xxxx…`, n counting from 1 per test. */
const blob = defineTool({
  name: 'blob',
  description: 'Returns 1200 characters.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: `${++produced}:`.padEnd(1200, 'x') }] }),
});
const text = (n: number) => `${n}:`.padEnd(1200, 'x');

const loop = (doneAfter: number, summaryTokens = 0) => [
  {
    match: 'summarised as a checkpoint',
    text: 'SUMMARY ONE',
    usage: { input: summaryTokens, totalTokens: summaryTokens },
  },
  { match: 'merge it into the summary', text: 'SUMMARY TWO' },
  { match: `toolResult:blob ${doneAfter}:`, text: 'all done' },
  { toolCalls: [{ name: 'blob', arguments: {} }] },
];
const scripts: Record<string, Script> = {
  loop5: { rules: loop(5) },
  /** Refuses contexts over 900 estimated tokens, as a provider does (the summary request, 866, fits). */
  tight: { rules: loop(4), contextWindow: 900 },
  tiny: { rules: loop(4), contextWindow: 250 },
  /** The summary costs 500 tokens. */
  costly: { rules: loop(5, 500) },
};

const requests: ModelRequest[] = [];
function recording(inner: ModelProvider): ModelProvider {
  return {
    checkModel: inner.checkModel,
    stream(request, signal, onPartial) {
      requests.push(structuredClone(request));
      return inner.stream(request, signal, onPartial);
    },
  };
}

const user = (t: string) => ({ role: 'user', content: [{ type: 'text', text: t }] });
const call = (id: string) => ({
  role: 'assistant',
  content: [{ type: 'toolCall', id, name: 'blob', arguments: {} }],
  stopReason: 'toolUse',
});
const result = (id: string, n: number) => ({
  role: 'toolResult',
  toolCallId: id,
  toolName: 'blob',
  content: [{ type: 'text', text: text(n) }],
  isError: false,
});
const summary = (s: string) => user(`${COMPACTION_SUMMARY_PREFIX}${s}${COMPACTION_SUMMARY_SUFFIX}`);
const entry = (s: string, compaction: object) => ({ ...summary(s), compaction });
/** The prompt and the first three tool turns (results 1–3): the same in every run before its first compaction. */
const threeTurns = [
  user('go'),
  call('call_1_1'),
  result('call_1_1', 1),
  call('call_2_1'),
  result('call_2_1', 2),
  call('call_3_1'),
  result('call_3_1', 3),
];
const done = { role: 'assistant', content: [{ type: 'text', text: 'all done' }], stopReason: 'stop' };
/** The conversation as the summary request writes it. */
const conversation = (parts: string[]) => `<conversation>\n${parts.join('\n\n')}\n</conversation>\n\n`;
const bare = (messages: Message[]) => strip(messages);

describe('compaction', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({ models: { scripted: recording(scriptedModel(scripts)) }, tools: [blob] });
  });
  afterAll(() => keel?.stop());
  beforeEach(() => {
    requests.length = 0;
    produced = 0;
  });

  it('past window − reserve the older messages are summarised; later calls see the summary and the kept tail; a second compaction updates the summary', async () => {
    const h = await keel.start({
      model: 'scripted/loop5',
      prompt: 'go',
      tools: ['blob'],
      compaction: { contextWindow: 1000, reserveTokens: 200, keepRecentTokens: 150 },
    });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(r.finalText).toBe('all done');

    // `messages` returns everything, each compaction entry where it happened
    const all = await h.allMessages();
    expect(strip(all)).toEqual([
      ...threeTurns,
      entry('SUMMARY ONE', { firstKept: 5, tokensBefore: 907, reason: 'threshold' }),
      call('call_2_1'),
      result('call_2_1', 4),
      call('call_3_1'),
      result('call_3_1', 5),
      entry('SUMMARY TWO', { firstKept: 10, tokensBefore: 936, reason: 'threshold' }),
      done,
    ]);

    expect(requests.map((q) => q.systemPrompt)).toEqual([
      '',
      '',
      '',
      SUMMARY_SYSTEM_PROMPT,
      '',
      '',
      SUMMARY_SYSTEM_PROMPT,
      '',
    ]);
    // the first summary request: the five oldest messages as text, no tools
    expect(requests[3].tools).toEqual([]);
    expect(bare(requests[3].messages)).toEqual([
      user(
        conversation([
          '[User]: go',
          '[Assistant tool calls]: blob()',
          `[Tool result]: ${text(1)}`,
          '[Assistant tool calls]: blob()',
          `[Tool result]: ${text(2)}`,
        ]) + SUMMARY_PROMPT,
      ),
    ]);
    // after it: the summary, then the kept tail (the last call and its result), then what follows
    expect(bare(requests[4].messages)).toEqual([summary('SUMMARY ONE'), call('call_3_1'), result('call_3_1', 3)]);
    expect(bare(requests[5].messages)).toEqual([
      summary('SUMMARY ONE'),
      call('call_3_1'),
      result('call_3_1', 3),
      call('call_2_1'),
      result('call_2_1', 4),
    ]);
    // the second summary request merges the messages kept last time and the new ones into the previous summary
    expect(bare(requests[6].messages)).toEqual([
      user(
        conversation([
          '[Assistant tool calls]: blob()',
          `[Tool result]: ${text(3)}`,
          '[Assistant tool calls]: blob()',
          `[Tool result]: ${text(4)}`,
        ]) +
          '<previous-summary>\nSUMMARY ONE\n</previous-summary>\n\n' +
          UPDATE_SUMMARY_PROMPT,
      ),
    ]);
    expect(bare(requests[7].messages)).toEqual([summary('SUMMARY TWO'), call('call_3_1'), result('call_3_1', 5)]);

    const events = (await allEvents(h)).filter((e) => e.type === 'compaction').map(({ seq: _s, ...e }) => e);
    expect(events).toEqual([
      { type: 'compaction', reason: 'threshold', firstKept: 5, summarized: 5, tokensBefore: 907 },
      { type: 'compaction', reason: 'threshold', firstKept: 10, summarized: 5, tokensBefore: 936 },
    ]);
    const history = await h.workflow.fetchHistory();
    const summaries = history
      .events!.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'compact')
      .map((e) => e.userMetadata?.summary?.data && Buffer.from(e.userMetadata.summary.data).toString());
    expect(summaries).toEqual([
      '"compact · 5 messages · ~907 tokens (threshold)"',
      '"compact · 5 messages · ~936 tokens (threshold)"',
    ]);
  });

  it('a context-overflow error: one compaction, then the call is retried and the run goes on', async () => {
    const h = await keel.start({
      model: 'scripted/tight',
      prompt: 'go',
      tools: ['blob'],
      compaction: { contextWindow: 100_000, keepRecentTokens: 150 },
    });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(strip(await h.allMessages())).toEqual([
      ...threeTurns,
      entry('SUMMARY ONE', { firstKept: 5, tokensBefore: 907, reason: 'overflow' }),
      call('call_2_1'),
      result('call_2_1', 4),
      done,
    ]);
    // call 4 refused (7 messages; its error reply is not kept), the summary request, the retry with the compacted context
    expect(requests.map((q) => q.messages.length)).toEqual([1, 3, 5, 7, 1, 3, 5]);
    expect(bare(requests[5].messages)).toEqual([summary('SUMMARY ONE'), call('call_3_1'), result('call_3_1', 3)]);
  });

  it('still too long after compacting: no second retry, the run fails with the provider error', async () => {
    const h = await keel.start({
      model: 'scripted/tiny',
      prompt: 'go',
      tools: ['blob'],
      compaction: { contextWindow: 100_000, keepRecentTokens: 150 },
    });
    const r = await h.result();
    expect(r.status).toBe('failed');
    expect(r.error).toBe('prompt is too long: 332 tokens > 250 maximum');
    expect(requests.map((q) => q.messages.length)).toEqual([1, 3, 1, 3]);
    expect(strip(await h.allMessages())).toEqual([
      user('go'),
      call('call_1_1'),
      result('call_1_1', 1),
      entry('SUMMARY ONE', { firstKept: 1, tokensBefore: 303, reason: 'overflow' }),
      {
        role: 'assistant',
        content: [{ type: 'text', text: '' }],
        stopReason: 'error',
        errorMessage: 'prompt is too long: 332 tokens > 250 maximum',
      },
    ]);
  });

  it("the summary's usage counts toward the budget: the run stops before the next model call", async () => {
    const h = await keel.start({
      model: 'scripted/costly',
      prompt: 'go',
      tools: ['blob'],
      compaction: { contextWindow: 1000, reserveTokens: 200, keepRecentTokens: 150 },
      budget: { maxTokens: 400 },
    });
    const r = await h.result();
    expect(r.status).toBe('stopped');
    expect(r.error).toBe('Budget exceeded: tokens 500 of 400');
    expect(r.modelCalls).toBe(4);
    expect(requests.map((q) => q.systemPrompt)).toEqual(['', '', '', SUMMARY_SYSTEM_PROMPT]);
    expect(strip(await h.allMessages()).slice(-1)).toEqual([
      entry('SUMMARY ONE', { firstKept: 5, tokensBefore: 907, reason: 'threshold' }),
    ]);
  });

  it('scripted models do not compact unless configured', async () => {
    const h = await keel.start({ model: 'scripted/loop5', prompt: 'go', tools: ['blob'] });
    const r = await h.result();
    expect(r.status).toBe('completed');
    expect(requests.map((q) => q.messages.length)).toEqual([1, 3, 5, 7, 9, 11]);
  });
});
