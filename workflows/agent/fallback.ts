/**
 * Fallback models (issue 36 item 5): which model takes a run's next request, and the switch to the next one when a
 * provider is down. A run's models are `[model, ...fallbackModels]`; a request that failed after its retries with a
 * provider outage (`providerOutage`: 5xx/overloaded, timeout, connection error — never a 4xx, a rate limit or a content
 * refusal) is sent again to the next model, which also takes the run's later requests until {@link FALLBACK_HOLD_MS}
 * of workflow time passed since the switch; then the run tries `model` again. Deterministic: workflow time only.
 */

import type { Usage } from '../../common/messages.js';
import { providerOutage } from '../failure-outcomes.js';
import { PATCH } from '../patches.js';
import type { ModelContext } from './model-context.js';
import type { RunConfig, SessionState } from './state.js';
import { since } from '../since.js';

/** How long a run stays on a fallback model before its requests go to its `model` again: 10 minutes. */
export const FALLBACK_HOLD_MS = 10 * 60_000;

/** The run's models in order: `model`, then its `fallbackModels`. */
export function modelChain(config: Pick<RunConfig, 'model' | 'fallbackModels'>): string[] {
  return [config.model, ...(config.fallbackModels ?? [])];
}

/** The model that takes the run's next request at workflow time `now`. */
export function activeModel(st: SessionState, now: number): string {
  const fb = st.fallback;
  if (!fb || fb.index === 0) return st.config.model;
  if (now - fb.since >= FALLBACK_HOLD_MS) {
    fb.index = 0; // the hold is over: back to the run's own model
    return st.config.model;
  }
  return modelChain(st.config)[fb.index] ?? st.config.model;
}

/**
 * After `model`'s request failed with `err`: the next model of the run when the failure is a provider outage and the
 * run has one (recorded in the state, the `model_fallback` event and the details), else undefined (the failure stands).
 */
export function switchAfter(ctx: ModelContext, model: string, err: unknown, now: number): string | undefined {
  const st = ctx.state;
  if (!st.config.fallbackModels?.length) return undefined;
  const chain = modelChain(st.config);
  // by position, not by name: a list that names a model twice still ends
  const at = st.fallback?.index ?? 0;
  const next = chain[at + 1];
  const outage = next !== undefined ? providerOutage(err) : undefined;
  if (!outage || !since(PATCH.fallbackModel)) return undefined;
  const turn = st.turns + 1;
  const last = `turn ${turn}: ${model} → ${next} (${outage.type}: ${outage.text.slice(0, 200)})`;
  st.fallback = {
    usage: {},
    ...st.fallback,
    index: at + 1,
    since: now,
    switches: (st.fallback?.switches ?? 0) + 1,
    last,
  };
  ctx.emit({ type: 'model_fallback', turn, from: model, to: next, errorType: outage.type, error: outage.text });
  return next;
}

/** Counts a request's usage under the model that made it (runs with `fallbackModels` only). */
export function countModelUsage(st: SessionState, model: string, ...usages: (Usage | undefined)[]): void {
  if (!st.config.fallbackModels?.length) return;
  const fb = (st.fallback ??= { index: 0, since: 0, switches: 0, last: '', usage: {} });
  const own = (fb.usage[model] ??= { tokens: 0, costUsd: 0 });
  for (const u of usages) {
    if (!u) continue;
    own.tokens += u.totalTokens;
    own.costUsd += u.cost.total;
  }
}

/** The details' lines of a run that switched: the last switch and each model's usage. */
export function fallbackDetails(st: SessionState): string[] {
  const fb = st.fallback;
  if (!fb || fb.switches === 0) return [];
  const usage = Object.entries(fb.usage)
    .map(([model, u]) => `${model} ${u.tokens} tokens · $${u.costUsd.toFixed(4)}`)
    .join(', ');
  return [`⚠ model fallback (${fb.switches}×), last at ${fb.last}`, ...(usage ? [`usage by model: ${usage}`] : [])];
}
