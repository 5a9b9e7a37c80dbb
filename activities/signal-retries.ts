/**
 * A signal an activity sends to another workflow (a tree budget's settlement, a provider limiter's back-off) that
 * must survive a frontend's bad second but must not hold the activity: three tries, `pauseMs` × the attempt between
 * them. Never throws: the receivers reclaim what a lost signal would have said (reservations and grants have leases).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';

export async function signalWithRetries(
  handle: WorkflowHandle,
  signal: string,
  arg: unknown,
  pauseMs: number,
): Promise<void> {
  for (let attempt = 1; attempt <= 3; attempt++) {
    try {
      await handle.signal(signal, arg);
      return;
    } catch {
      if (attempt < 3) await sleep(pauseMs * attempt);
    }
  }
}
