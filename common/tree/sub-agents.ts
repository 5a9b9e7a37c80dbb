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

/**
 * True when a tree's bound (its root run's `tools`) allows the tool `name`: listed, or under a listed MCP wildcard
 * `<server>__*`.
 */
export function withinBound(name: string, bound: readonly string[]): boolean {
  return bound.includes(name) || bound.some((b) => b.endsWith('__*') && name.startsWith(b.slice(0, -1)));
}

/**
 * A sub-agent's tools and the bound its own sub-agents inherit (README "Sub-agents"): the tools of its definition that
 * its tree's bound allows, the bound unchanged; with `ownTools`, all of them, the bound widened by them.
 */
export function boundedTools(
  tools: readonly string[],
  bound: readonly string[],
  ownTools: boolean,
): { tools: string[]; bound: string[] } {
  if (ownTools) return { tools: [...tools], bound: [...bound, ...tools.filter((t) => !bound.includes(t))] };
  return { tools: tools.filter((t) => withinBound(t, bound)), bound: [...bound] };
}

/** A child's model options: the caller's, option by option under the sub-agent definition's (absent when neither has any). */
export function inheritedModelOptions<T extends object>(caller: T | undefined, own: T | undefined): T | undefined {
  return caller === undefined && own === undefined ? undefined : ({ ...caller, ...own } as T);
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
