/**
 * The usage of model attempts that stream and then throw (issue 20 item 2): every attempt's last streamed usage counts,
 * not only the first attempt's. A provider streams a partial with `totalTokens` 100 (attempts 1–3) or 1 (attempts 4–6)
 * and throws a plain error; the run's usage is the exact sum of every attempt, and a budget stops the call once the
 * thrown attempts spent it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { emptyUsage, type AssistantMessage, type Usage } from '../../common/messages.js';
import type { ModelProvider } from '../../activities/model/provider.js';
import { startKeel, type Keel } from './harness.js';

const tokens = (totalTokens: number): Usage => ({ ...emptyUsage(), input: totalTokens, totalTokens });

/** Attempt n (1-based, counted per model id) streams `tokens(n <= 3 ? 100 : 1)`; it throws unless n is `succeedAt`. */
function throwingModel(): ModelProvider & { attempts: Map<string, number> } {
  const attempts = new Map<string, number>();
  return {
    attempts,
    async stream(request, _signal, onPartial) {
      const n = (attempts.get(request.modelId) ?? 0) + 1;
      attempts.set(request.modelId, n);
      const usage = tokens(n <= 3 ? 100 : 1);
      const partial: AssistantMessage = {
        role: 'assistant',
        content: [{ type: 'text', text: `attempt ${n}` }],
        api: 'thrower',
        provider: 'thrower',
        model: request.modelId,
        usage,
        stopReason: 'stop',
        timestamp: Date.now(),
      };
      onPartial(partial);
      const succeedAt = Number(request.modelId.split('-')[1]);
      if (n === succeedAt) return partial;
      throw new Error(`connection reset on attempt ${n}`);
    },
  };
}

describe('usage of attempts that stream, then throw', () => {
  let keel: Keel;
  let model: ReturnType<typeof throwingModel>;
  beforeAll(async () => {
    model = throwingModel();
    keel = await startKeel({ models: { thrower: model } });
  });
  afterAll(() => keel?.stop());

  const retry = { initialInterval: '10ms', backoffCoefficient: 1, maximumAttempts: 6 };

  it('six attempts that throw (3 × 100 tokens, 3 × 1) fail the run with 303 tokens', async () => {
    const h = await keel.start({ model: 'thrower/fail-0', prompt: 'go', modelRetry: retry });
    const r = await h.result();
    expect(model.attempts.get('fail-0')).toBe(6);
    expect(r.status).toBe('failed');
    expect(r.error).toBe('connection reset on attempt 6');
    expect(r.usage.totalTokens).toBe(303);
    expect((r.newMessages.at(-1) as AssistantMessage).usage.totalTokens).toBe(303);
  });

  it('five attempts that throw, then one that answers: 303 tokens (3 × 100 + 2 × 1 failed, 1 answered)', async () => {
    const h = await keel.start({ model: 'thrower/ok-6', prompt: 'go', modelRetry: retry });
    const r = await h.result();
    expect(model.attempts.get('ok-6')).toBe(6);
    expect([r.status, r.finalText]).toEqual(['completed', 'attempt 6']);
    expect(r.usage.totalTokens).toBe(303);
  });

  it('a budget of 250 tokens stops the call after the third thrown attempt (300 spent); no fourth provider call', async () => {
    const h = await keel.start({
      model: 'thrower/budget-0',
      prompt: 'go',
      modelRetry: retry,
      budget: { maxTokens: 250 },
    });
    const r = await h.result();
    expect(model.attempts.get('budget-0')).toBe(3);
    expect(r.status).toBe('stopped');
    expect(r.error).toBe('Budget exceeded: tokens 300 of 250');
    expect(r.usage.totalTokens).toBe(300);
  });
});
