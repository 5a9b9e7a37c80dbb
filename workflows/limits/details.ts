/** The limiter's current details (Markdown, the Temporal Web UI): its limits, what is in use, the waiting line. */
import type { LimiterSnapshot } from '../../common/limits/ledger.js';

const n = (x: number) => String(Math.round(x)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

export function renderLimiterDetails(s: LimiterSnapshot): string {
  const l = s.limit;
  const use = [
    l.requestsPerMinute !== undefined ? `requests/min ${n(s.inUse.requests)} of ${n(l.requestsPerMinute)}` : '',
    l.inputTokensPerMinute !== undefined ? `tokens/min ${n(s.inUse.input)} of ${n(l.inputTokensPerMinute)}` : '',
    l.outputTokensPerMinute !== undefined
      ? `output tokens/min ${n(s.inUse.output)} of ${n(l.outputTokensPerMinute)}`
      : '',
    l.concurrentRequests !== undefined
      ? `concurrent ${s.inUse.concurrent} of ${l.concurrentRequests}`
      : `in flight ${s.inUse.concurrent}`,
  ].filter(Boolean);
  const lines = [`**provider limits ${s.key}** · ${s.spec || 'no limit'}`, `in use: ${use.join(' · ')}`];
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
