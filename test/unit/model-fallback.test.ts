/** Which model takes a run's request (workflows/agent/fallback.ts): the chain, the hold after a switch, the details. */
import { describe, expect, it } from 'vitest';
import { emptyUsage } from '../../common/messages.js';
import {
  activeModel,
  countModelUsage,
  fallbackDetails,
  FALLBACK_HOLD_MS,
  modelChain,
} from '../../workflows/agent/fallback.js';
import type { SessionState } from '../../workflows/agent/state.js';

const state = (fallback?: SessionState['fallback']): SessionState =>
  ({
    config: { model: 'anthropic/a', fallbackModels: ['openai/b', 'google/c'] },
    ...(fallback ? { fallback } : {}),
  }) as SessionState;

describe('fallback models', () => {
  it('the chain is the model, then its fallbacks', () => {
    expect(modelChain({ model: 'anthropic/a' })).toEqual(['anthropic/a']);
    expect(modelChain(state().config)).toEqual(['anthropic/a', 'openai/b', 'google/c']);
  });

  it('a run stays on the model it switched to for the hold, then goes back to its own', () => {
    expect(activeModel(state(), 0)).toBe('anthropic/a');
    const st = state({ index: 2, since: 1000, switches: 2, last: '', usage: {} });
    expect(activeModel(st, 1000 + FALLBACK_HOLD_MS - 1)).toBe('google/c');
    expect(activeModel(st, 1000 + FALLBACK_HOLD_MS)).toBe('anthropic/a');
    expect(st.fallback!.index).toBe(0);
  });

  it("counts each model's usage, and the details show it once the run switched", () => {
    const st = state();
    const u = { ...emptyUsage(), totalTokens: 120, cost: { ...emptyUsage().cost, total: 0.01 } };
    countModelUsage(st, 'anthropic/a', u, undefined);
    expect(fallbackDetails(st)).toEqual([]); // no switch yet
    st.fallback = { ...st.fallback!, switches: 1, last: 'turn 1: anthropic/a → openai/b (ModelError.Server: 529)' };
    countModelUsage(st, 'openai/b', u, u);
    expect(fallbackDetails(st)).toEqual([
      '⚠ model fallback (1×), last at turn 1: anthropic/a → openai/b (ModelError.Server: 529)',
      'usage by model: anthropic/a 120 tokens · $0.0100, openai/b 240 tokens · $0.0200',
    ]);
  });

  it('a run without fallback models keeps no per-model usage', () => {
    const st = { config: { model: 'anthropic/a' } } as SessionState;
    countModelUsage(st, 'anthropic/a', emptyUsage());
    expect(st.fallback).toBeUndefined();
  });
});
