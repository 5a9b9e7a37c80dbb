/** What a limiter holds in use against its limits, as one line (its Web UI details and `keel limits` say it alike). */
import type { LimiterSnapshot } from './ledger.js';

/** `98,000`: a count with thousands separators. */
export const thousands = (x: number): string => String(Math.round(x)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** `requests/min 12 of 60 · tokens/min 98,000 of 100,000 · in flight 3 of 20`: each limit the key has, and what is in flight. */
export function limiterUse(s: LimiterSnapshot): string {
  const l = s.limit;
  const n = thousands;
  return [
    l.requestsPerMinute !== undefined ? `requests/min ${n(s.inUse.requests)} of ${n(l.requestsPerMinute)}` : '',
    l.inputTokensPerMinute !== undefined ? `tokens/min ${n(s.inUse.input)} of ${n(l.inputTokensPerMinute)}` : '',
    l.outputTokensPerMinute !== undefined
      ? `output tokens/min ${n(s.inUse.output)} of ${n(l.outputTokensPerMinute)}`
      : '',
    `in flight ${s.inUse.concurrent}${l.concurrentRequests !== undefined ? ` of ${l.concurrentRequests}` : ''}`,
  ]
    .filter(Boolean)
    .join(' · ');
}
