/**
 * What became of a run, read without assuming a worker is up: a closed run's result comes from its history
 * (Completed result, `AgentRunFailed` details); queries (which need a worker to replay) are only a bounded extra.
 */
import { WorkflowFailedError, type WorkflowExecutionDescription, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, TerminatedFailure, TimeoutFailure } from '@temporalio/common';
import { carriedResult } from '../node-common/run-result.js';
import { emptyUsage } from '../common/messages.js';
import type { AgentRunResult, AgentRunState } from '../common/run.js';
import { stateQuery } from '../workflows/definitions.js';

/** Temporal's execution status, lower-case: running, completed, failed, cancelled, terminated, timed_out, continued_as_new. */
export function temporalStatus(d: WorkflowExecutionDescription): string {
  const name = d.status.name;
  return name === 'CANCELLED' ? 'cancelled' : name.toLowerCase();
}

export interface Outcome {
  /** Keel's status: completed | stopped | failed | cancelled, or terminated / timed_out for runs Temporal ended. */
  status: AgentRunResult['status'] | 'terminated' | 'timed_out';
  result: AgentRunResult;
  /** The failure type (InvalidAgentInput, AgentRunFailed, …) when the workflow failed. */
  failureType?: string;
}

/** Runs `fn` with an RPC deadline (a query to a workflow with no worker would otherwise wait long). */
export function withDeadline<T>(handle: WorkflowHandle, ms: number, fn: () => Promise<T>): Promise<T> {
  return handle.client.connection.withDeadline(Date.now() + ms, fn);
}

/** The `state` query, or undefined when no worker answers within `ms`. */
export async function tryState(handle: WorkflowHandle, ms = 3000): Promise<AgentRunState | undefined> {
  try {
    return await withDeadline(handle, ms, () => handle.query(stateQuery));
  } catch {
    return undefined;
  }
}

/** The outcome of a closed run (follows the continue-as-new chain). */
export async function closedRunOutcome(
  handle: WorkflowHandle,
  opts: { stateTimeoutMs?: number } = {},
): Promise<Outcome> {
  try {
    const result = (await handle.result()) as AgentRunResult;
    return { status: result.status, result };
  } catch (err) {
    if (!(err instanceof WorkflowFailedError)) throw err;
    const cause = err.cause;
    if (cause instanceof ApplicationFailure) {
      const result = carriedResult(err);
      if (result) return { status: 'failed', result, failureType: cause.type ?? undefined };
      return { status: 'failed', result: bare('failed', cause.message), failureType: cause.type ?? undefined };
    }
    if (cause instanceof CancelledFailure || err.message.includes('cancel')) {
      const st = await tryState(handle, opts.stateTimeoutMs ?? 3000);
      return {
        status: 'cancelled',
        result: {
          status: 'cancelled',
          finalText: st?.lastReply ?? '',
          newMessages: [],
          usage: st?.usage ?? emptyUsage(),
          turns: st?.turns ?? 0,
        },
      };
    }
    if (cause instanceof TerminatedFailure) return { status: 'terminated', result: bare('failed', 'terminated') };
    if (cause instanceof TimeoutFailure) return { status: 'timed_out', result: bare('failed', 'timed out') };
    return { status: 'failed', result: bare('failed', cause?.message ?? err.message) };
  }
}

function bare(status: AgentRunResult['status'], error: string): AgentRunResult {
  return { status, finalText: '', newMessages: [], usage: emptyUsage(), turns: 0, error };
}

/** Exit code for a closed run: 0 completed/stopped, 1 otherwise. */
export function exitCodeOf(status: string): number {
  return status === 'completed' || status === 'stopped' ? 0 : 1;
}
