/**
 * Activity `awaitSubAgentRun`: a sub-agent call whose child id was already taken by a running run (its start was
 * retried, e.g. after a reset of the parent) attaches to that run instead of starting a second one: it waits for the
 * run's result through the client, heartbeating, and asks Temporal to cancel the run when the call is cancelled.
 */
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { WorkflowFailedError } from '@temporalio/client';
import type { AgentRunResult } from '../../common/run.js';
import { startHeartbeat } from '../heartbeat.js';

/** `result`: the run's result (a failed run's own result too); else how it closed. */
export type AwaitedRun = { result: AgentRunResult } | { closed: 'cancelled' | 'failed'; error: string };

export function createAwaitSubAgentRun(client: () => Client) {
  return async function awaitSubAgentRun(input: { workflowId: string }): Promise<AwaitedRun> {
    const ctx = Context.current();
    const heartbeat = startHeartbeat(ctx);
    const handle = client().workflow.getHandle(input.workflowId);
    const onCancel = () => void handle.cancel().catch(() => undefined);
    ctx.cancellationSignal.addEventListener('abort', onCancel, { once: true });
    try {
      return { result: (await handle.result()) as AgentRunResult };
    } catch (err) {
      if (ctx.cancellationSignal.aborted) throw err;
      if (err instanceof WorkflowFailedError) {
        const details = (err.cause as { details?: unknown[] } | undefined)?.details?.[0] as AgentRunResult | undefined;
        if (details && typeof details === 'object' && 'status' in details) return { result: details };
        const cancelled = err.cause?.name === 'CancelledFailure';
        return { closed: cancelled ? 'cancelled' : 'failed', error: err.cause?.message ?? err.message };
      }
      throw err;
    } finally {
      ctx.cancellationSignal.removeEventListener('abort', onCancel);
      heartbeat.stop();
    }
  };
}
