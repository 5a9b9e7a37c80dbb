/** Exact texts the loop produces (pi-reference.md §0.4, §D; keel.md §4.2). Kept byte for byte. */

export const toolNotFound = (name: string): string => `Tool ${name} not found`;

export const TOOL_BLOCKED = 'Tool execution was blocked';

export const OPERATION_ABORTED = 'Operation aborted';

export const lengthTruncated = (name: string): string =>
  `Tool call "${name}" was not executed: the response hit the output token limit, so its arguments may be truncated. Re-issue the tool call with complete arguments.`;

export const toolInterrupted = (name: string): string =>
  `Tool ${name} was interrupted before it finished and was not retried because it is not idempotent. It may have partially run.`;

export const CANNOT_CONTINUE_EMPTY = 'Cannot continue: no messages in context';

export const cannotContinueFrom = (role: string): string => `Cannot continue from message role: ${role}`;

/** Failure types (Temporal `ApplicationFailure.type`). */
export const ErrorType = {
  /** The run input is malformed; non-retryable; the message names every bad field. */
  InvalidAgentInput: 'InvalidAgentInput',
  /** The run ended with an assistant message whose stopReason is `error`; details carry the AgentRunResult. */
  AgentRunFailed: 'AgentRunFailed',
  /** A model call's failed attempts spent what was left of the run's budget: no further attempt was made. */
  BudgetExceeded: 'BudgetExceeded',
  /** The provider refused the context as longer than the model's window: compact, then retry once. */
  ContextOverflow: 'ModelError.ContextOverflow',
} as const;
