/**
 * Sub-agent calls (README "Sub-agents"): the child's prompt and the exact texts of the error results a sub-agent call
 * can get. Plain functions shared by the workflow and the activities.
 */

/** Default depth limit of a sub-agent tree (worker option `maxAgentDepth`): a child of the root has depth 1. */
export const DEFAULT_MAX_AGENT_DEPTH = 3;

/** The child's prompt: the `task` argument, or (an agent with an `input` schema) the arguments as JSON. */
export function subAgentPrompt(args: unknown, typedInput: boolean): string {
  if (!typedInput) {
    const task = (args as { task?: unknown } | undefined)?.task;
    return typeof task === 'string' ? task : '';
  }
  return JSON.stringify(args ?? {});
}

/** The child run's workflow id for a tool call: `<parentWorkflowId>-<toolCallId>`. */
export function childWorkflowId(parentWorkflowId: string, toolCallId: string): string {
  return `${parentWorkflowId}-${toolCallId}`;
}

export const subAgentTooDeep = (name: string, depth: number, maxDepth: number): string =>
  `Sub-agent "${name}" was not started: it would run at depth ${depth}, deeper than this worker's limit of ${maxDepth} (maxAgentDepth). Do the task here, or ask for it without delegating.`;

export const subAgentFailed = (name: string, childId: string, why: string): string =>
  `Sub-agent "${name}" failed (run ${childId}): ${why}`;

export const subAgentStopped = (name: string, childId: string, why: string): string =>
  `Sub-agent "${name}" stopped before finishing (run ${childId}): ${why}`;

export const subAgentCancelled = (name: string, childId: string): string =>
  `Sub-agent "${name}" was cancelled (run ${childId}); it gave no result.`;

export const subAgentOutputNotJson = (name: string, message: string): string =>
  `Sub-agent "${name}" output is not valid JSON: ${message}`;

export const subAgentOutputInvalid = (name: string, problems: string): string =>
  `Sub-agent "${name}" output failed validation:\n${problems}`;
