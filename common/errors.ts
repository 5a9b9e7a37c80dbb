/** Exact texts the loop produces (Pi's own, and Keel's for lost attempts); listed in docs/errors.md. Kept byte for byte. */

export const toolNotFound = (name: string): string => `Tool ${name} not found`;

export const TOOL_BLOCKED = 'Tool execution was blocked';

export const OPERATION_ABORTED = 'Operation aborted';

export const lengthTruncated = (name: string): string =>
  `Tool call "${name}" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.`;

/**
 * The run's home worker did not start a worker-local tool call in time (it is gone): the run moved to `to` (the event
 * `worker_rehomed` and the run's current details carry this text).
 */
export const homeWorkerLost = (toolName: string, from: string, timeout: string, to: string | undefined): string =>
  `Home worker lost: ${toolName} was not started on task queue ${from} within ${timeout}; worker-local tools now run on ${to ? `task queue ${to}` : "any worker of the run's task queue"}.`;

export const toolInterrupted = (name: string): string =>
  `Tool ${name} was interrupted before it finished and was not retried because it is not idempotent. It may have partially run.`;

/**
 * The result of a tool call whose id an earlier call of the same assistant message already uses.
 * Keel's own text (Pi has no rule for it): the later duplicates are not executed, so no two executions share an id.
 */
export const duplicateToolCallId = (id: string, name: string): string =>
  `Tool call "${name}" was not executed: its id "${id}" is already used by an earlier tool call in this message. Give every tool call its own id.`;

export const CANNOT_CONTINUE_EMPTY = 'Cannot continue: no messages in context';

export const cannotContinueFrom = (role: string): string => `Cannot continue from message role: ${role}`;

/** The model activity returned something that is not an assistant message (the run records it as a model error). */
export const malformedModelOutput = (problem: string): string =>
  `The model returned a malformed message (${problem}); the call is treated as failed.`;

/** `agentWorkflow` was started with a second argument (that slot carries Keel's state across continue-as-new). */
export const UNEXPECTED_SECOND_ARGUMENT =
  'agentWorkflow takes one argument, the AgentRunInput; the second argument is the state Keel carries across continue-as-new and must not be given by callers';

/** A bug in Keel's workflow code: the run fails instead of retrying a workflow task forever. */
export const workflowBug = (message: string): string =>
  `Keel workflow error: ${message}. The run cannot continue; this is a bug in Keel — report it with the workflow id and history.`;

/** Failure types (Temporal `ApplicationFailure.type`). */
export const ErrorType = {
  /** The run input is malformed; non-retryable; the message names every bad field. */
  InvalidAgentInput: 'InvalidAgentInput',
  /** The run ended with an assistant message whose stopReason is `error`; details carry the AgentRunResult. */
  AgentRunFailed: 'AgentRunFailed',
  /** An unexpected error in Keel's workflow code (a bug); non-retryable, so the run fails instead of retrying forever. */
  WorkflowBug: 'KeelWorkflowBug',
  /** A model call's failed attempts spent what was left of the run's budget: no further attempt was made. */
  BudgetExceeded: 'BudgetExceeded',
  /** The provider refused the context as longer than the model's window: compact, then retry once. */
  ContextOverflow: 'ModelError.ContextOverflow',
  /**
   * A worker-local tool call placed as a local activity ran on a worker that is not the run's home: refused before
   * anything ran; the workflow runs the call as an activity on the home queue instead (docs/local-tools.md).
   */
  NotHome: 'KeelNotHome',
} as const;
