/**
 * A closed run's result as its workflow left it: the return value of a completed run, or the `AgentRunResult` a failed
 * run carries in its failure's details (`AgentRunFailed`, `InvalidAgentOutput`: common/errors.ts
 * `failureCarriesResult`). Shared by the batch's child outcomes, the graders, the CLI and counterfactual replay.
 */
import { ApplicationFailure, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { failureCarriesResult } from '../common/errors.js';
import type { AgentRunResult } from '../common/run.js';

/** The result a failed run's `WorkflowFailedError` carries, else undefined. Must not throw. */
export function carriedResult(err: unknown): AgentRunResult | undefined {
  const cause = err instanceof WorkflowFailedError ? err.cause : undefined;
  return cause instanceof ApplicationFailure && failureCarriesResult(cause.type) && cause.details?.[0]
    ? (cause.details[0] as AgentRunResult)
    : undefined;
}

/** A closed run's result: its return value, or the one its failure carries; undefined when it has none. */
export async function closedRunResult(handle: WorkflowHandle): Promise<AgentRunResult | undefined> {
  try {
    return (await handle.result()) as AgentRunResult;
  } catch (err) {
    return carriedResult(err);
  }
}
