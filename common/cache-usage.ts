/** How a run's (or a batch's) prompt-cache use is shown: the details, `keel status`, `keel run`'s summary, batch summaries. */
import type { Usage } from './messages.js';

/** The share of input tokens read from the provider's prompt cache: cacheRead / (input + cacheRead + cacheWrite). */
export function cachedShare(u: Pick<Usage, 'input' | 'cacheRead' | 'cacheWrite'>): number {
  const all = u.input + u.cacheRead + u.cacheWrite;
  return all > 0 ? u.cacheRead / all : 0;
}

/**
 * `cache: 12000 read · 3000 written (75 % of input)`, or undefined when the provider reported no cache use (so runs
 * without a prompt cache show what they showed before).
 */
export function cacheUsageText(u: Pick<Usage, 'input' | 'cacheRead' | 'cacheWrite'>): string | undefined {
  if (!u.cacheRead && !u.cacheWrite) return undefined;
  return `cache: ${u.cacheRead} read · ${u.cacheWrite} written (${Math.round(cachedShare(u) * 100)} % of input)`;
}

/** ` · cache 900 read · 50 written` for a batch summary line, or '' when its tasks reported no cache use. */
export function batchCacheText(s: { cacheRead?: number; cacheWrite?: number }): string {
  if (!s.cacheRead && !s.cacheWrite) return '';
  return ` · cache ${s.cacheRead ?? 0} read · ${s.cacheWrite ?? 0} written`;
}
