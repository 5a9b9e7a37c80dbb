/** The provider-limits tests' closing check: a limiter left with no request in flight or waiting. */
import type { LimiterSnapshot } from '../../common/limits/ledger.js';
import { until } from './harness.js';

/**
 * Waits (up to `timeoutMs`) until the limiter's state has no request in flight and none waiting, and returns that
 * state; else rejects with the last state it saw.
 */
export async function limiterDrained(
  limiter: () => Promise<LimiterSnapshot>,
  timeoutMs: number,
): Promise<LimiterSnapshot> {
  let last: LimiterSnapshot | undefined;
  await until(
    async () => {
      const s = (last = await limiter());
      return s.inUse.concurrent === 0 && s.waiting.length === 0;
    },
    timeoutMs,
    'limiter empty',
  ).catch((err: Error) => {
    throw new Error(`${err.message}: ${JSON.stringify(last)}`);
  });
  return last!;
}
