/**
 * Context compaction in the workflow (README "Compaction"; the pure parts are common/compaction.ts): before a model
 * call, when the estimated context exceeds the window minus the reserve — or once after the provider refused the
 * context (`ModelError.ContextOverflow`) — the `compact` activity summarises the older messages and the workflow
 * appends the compaction entry to the transcript. Its command changes are behind `patched('keel-compaction')`.
 */

import {
  DEFAULT_KEEP_RECENT_TOKENS,
  DEFAULT_RESERVE_TOKENS,
  compactionEntry,
  estimateContext,
  planCompaction,
  type CompactionPlan,
} from '../../common/compaction.js';
import { modelActivities } from '../activities.js';
import { compactionFailure } from '../failure-outcomes.js';
import { workflowNow } from '../clock.js';
import type { ModelContext } from './model-context.js';
import type { RunConfig, SessionState } from './state.js';
import { since } from '../since.js';

/** The patch id guarding compaction (the `compact` activity, the appended entry, the compact-and-retry after an overflow). */
export const COMPACTION_PATCH = 'keel-compaction';

/** `compacted`: an entry was appended; `budget`: the budget allowed no summary request (the run must stop). */
export type CompactionOutcome = 'compacted' | 'skipped' | 'budget';

function settings(
  c: RunConfig['compaction'],
  contextWindow: number | undefined,
): { window: number; reserve: number; keep: number } | undefined {
  if (c === false) return undefined;
  const window = c?.contextWindow ?? contextWindow;
  if (!window) return undefined;
  return {
    window,
    reserve: c?.reserveTokens ?? DEFAULT_RESERVE_TOKENS,
    keep: c?.keepRecentTokens ?? DEFAULT_KEEP_RECENT_TOKENS,
  };
}

/** What a compaction before this model call would summarise, and the context's estimated tokens. */
export interface CompactionDue {
  reason: 'threshold' | 'overflow';
  plan: CompactionPlan;
  tokens: number;
}

/**
 * Whether to compact before a model call (synchronous, so a turn without compaction awaits nothing here): when
 * `reason` is `overflow` (the last call was refused as too long) or the estimated context exceeds `window - reserve`,
 * and there is something to summarise (the patch check included). Undefined: no compaction.
 */
export function compactionDue(
  ctx: Pick<ModelContext, 'state'>,
  reason: 'threshold' | 'overflow',
): CompactionDue | undefined {
  const st = ctx.state;
  const cfg = settings(st.config.compaction, st.contextWindow);
  if (!cfg) return undefined;
  const { transcript, config } = st;
  const tokens = estimateContext(transcript, config.systemPrompt ?? '');
  if (reason === 'threshold' && tokens <= cfg.window - cfg.reserve) return undefined;
  const plan = planCompaction(transcript, cfg.keep, tokens);
  if (!plan || !since(COMPACTION_PATCH)) return undefined;
  return { reason, plan, tokens };
}

/**
 * Compacts as {@link compactionDue} decided. A failed summary leaves the transcript as it was (event `compaction`
 * with `error`, outcome `skipped`); the usage of every attempt counts, toward the budget too.
 */
export async function compact(s: ModelContext, { reason, plan, tokens }: CompactionDue): Promise<CompactionOutcome> {
  const st = s.state;
  const { transcript, config } = st;
  if (s.budget.stopBeforeModelCall()) return 'budget';
  const summarized = plan.keepFrom - plan.from;
  const left = s.budget.left();
  s.budget.holdOwnRequest();
  try {
    const result = await s.runCancellable(() =>
      modelActivities(config).compact.executeWithOptions(
        { summary: `compact · ${summarized} messages · ~${tokens} tokens (${reason})` },
        [
          {
            run: s.run,
            messageCount: transcript.length,
            digest: s.digests[transcript.length],
            model: config.model,
            options: config.modelOptions ?? {},
            from: plan.from,
            keepFrom: plan.keepFrom,
            ...(plan.previous !== undefined ? { previous: plan.previous } : {}),
            ...left,
            ...s.providerPriority(),
          },
        ],
      ),
    );
    s.budget.releaseOwnRequest();
    s.budget.spend(result.usage, result.failedAttemptsUsage);
    s.append(
      compactionEntry(result.summary, { firstKept: plan.keepFrom, tokensBefore: tokens, reason }, workflowNow()),
    );
    s.emit({ type: 'compaction', reason, firstKept: plan.keepFrom, summarized, tokensBefore: tokens });
    return 'compacted';
  } catch (err) {
    const failure = compactionFailure(err);
    s.budget.releaseOwnRequest();
    s.budget.spend(failure.usage);
    if (failure.treeBudget) s.budget.stopWith(failure.treeBudget);
    if ((failure.budgetExceeded || failure.treeBudget) && s.budget.stopBeforeModelCall()) return 'budget';
    if (s.abort) return 'skipped';
    s.emit({
      type: 'compaction',
      reason,
      firstKept: plan.keepFrom,
      summarized,
      tokensBefore: tokens,
      error: failure.text,
    });
    return 'skipped';
  }
}
