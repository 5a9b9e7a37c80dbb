/** The limiter's current details (Markdown, the Temporal Web UI): its limits, what is in use, the waiting line. */
import type { LimiterSnapshot } from '../../common/limits/ledger.js';
import { limiterUse, thousands as n } from '../../common/limits/use-text.js';

export function renderLimiterDetails(s: LimiterSnapshot): string {
  const lines = [`**provider limits ${s.key}** · ${s.spec || 'no limit'}`, `in use: ${limiterUse(s)}`];
  if (s.pausedForMs !== undefined)
    lines.push(`⚠ the provider asked to retry after ${Math.ceil(s.pausedForMs / 1000)} s`);
  lines.push(
    s.waiting.length === 0
      ? 'waiting: none'
      : `waiting: ${s.waiting.map((w) => `priority ${w.priority}: ${w.count} (oldest ${Math.round(w.oldestMs / 1000)} s)`).join(' · ')}`,
  );
  lines.push(
    `granted ${n(s.totals.granted)} (${n(s.totals.waited)} after a wait) · settled ${n(s.totals.settledInput)} input, ${n(s.totals.settledOutput)} output tokens · retry-after ${s.totals.backoffs}`,
  );
  return lines.join('\n\n');
}
