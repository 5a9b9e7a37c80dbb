/** The provider-limits tests' reading of a limiter: its state, and the closing check (nothing in flight or waiting). */
import type { Client } from '@temporalio/client';
import { limiterWorkflowId } from '../../common/limits/definition.js';
import type { LimiterSnapshot } from '../../common/limits/ledger.js';
import { LIMITS_STATE_QUERY } from '../../common/limits/protocol.js';
import { until } from './harness.js';

/** A reader of the `key` limiter's state on `taskQueue` (its `keelLimitsState` query). */
export function limiterState(client: Client, taskQueue: string, key = 'anthropic'): () => Promise<LimiterSnapshot> {
  const handle = client.workflow.getHandle(limiterWorkflowId(taskQueue, key));
  return () => handle.query<LimiterSnapshot>(LIMITS_STATE_QUERY);
}

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
