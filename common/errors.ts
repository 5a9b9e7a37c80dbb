/** Exact texts the loop produces (Pi's own, and Keel's for lost attempts); listed in docs/errors.md. Kept byte for byte. */

/** The text of something thrown, as Pi reports it: an Error's message, `String(x)` for anything else. */
export function thrownMessage(thrown: unknown): string {
  return thrown instanceof Error ? thrown.message : String(thrown);
}

export const toolNotFound = (name: string): string => `Tool ${name} not found`;

/**
 * A call of a tool the worker has but the run did not enable (Keel's text, from 0.6.3; Pi knows only the run's tools
 * and says {@link toolNotFound}, which Keel keeps for a tool that exists nowhere).
 */
export const toolNotEnabled = (name: string): string =>
  `${name} is registered on this worker but not enabled for this run: add --tools ${name}`;

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

/**
 * Most characters a model reply may stream (its text, thinking and tool-call arguments as JSON text, all blocks
 * together), and most bytes its final message may have as JSON: the `callModel` result is one Temporal payload (at most
 * 2 MB, 2,097,152 bytes, on the server by default), and this leaves room for the rest of the result.
 */
export const MAX_REPLY_SIZE = 2_000_000;

/**
 * A model reply over {@link MAX_REPLY_SIZE}: `what` is `the arguments of tool call "<name>" passed 2,000,000 characters`
 * (or `its text`, `its thinking`) while streaming, or `the message is <n> bytes of JSON` for a reply that was not
 * streamed. The run ends `failed` with this text (docs/errors.md).
 */
export const replyTooLarge = (what: string): string =>
  `Model reply too large: ${what}; a reply must fit one Temporal payload (2 MB). It was refused and no tool ran: ask for less at once (e.g. a large file in several writes).`;

/** `agentWorkflow` was started with a second argument (that slot carries Keel's state across continue-as-new). */
export const UNEXPECTED_SECOND_ARGUMENT =
  'agentWorkflow takes one argument, the AgentRunInput; the second argument is the state Keel carries across continue-as-new and must not be given by callers';

/** A bug in Keel's workflow code: the run fails instead of retrying a workflow task forever. */
export const workflowBug = (message: string): string =>
  `Keel workflow error: ${message}. The run cannot continue; this is a bug in Keel — report it with the workflow id and history.`;

/**
 * Every failure type Keel gives an `ApplicationFailure` (Temporal's `type`), in one table (docs/errors.md lists it).
 * The values are wire strings: recorded histories, other-language clients and operators' queries match them, so they
 * stay byte for byte as they are (the keys may be renamed, the values not). A model provider of your own may throw
 * other `ModelError.*` types (provider.ts); `ModelError.Scripted` is the scripted model's default for a scripted failure.
 */
export const ErrorType = {
  // --- runs (agentWorkflow)
  /** The run input is malformed; non-retryable; the message names every bad field. */
  InvalidAgentInput: 'InvalidAgentInput',
  /** The run ended with an assistant message whose stopReason is `error`; details carry the AgentRunResult. */
  AgentRunFailed: 'AgentRunFailed',
  /**
   * A run given an `output` schema ended with a final answer that is not valid JSON for it after its `outputRepairs`
   * (docs/runs.md "Typed results"); non-retryable; details carry the AgentRunResult (status `failed`, no `output`).
   */
  InvalidAgentOutput: 'InvalidAgentOutput',
  /** An unexpected error in Keel's workflow code (a bug); non-retryable, so the run fails instead of retrying forever. */
  WorkflowBug: 'KeelWorkflowBug',
  /** An Update (`followUp`, `approve`, …) was refused by its validator or guard; the message says why. */
  UpdateRejected: 'KeelUpdateRejected',
  /** A model call's failed attempts spent what was left of the run's budget: no further attempt was made. */
  BudgetExceeded: 'BudgetExceeded',
  /**
   * The root of the run's tree (a sub-agent's root run, a batch task's batch) refused the reservation of a model
   * request: its budget is spent (message `Budget exceeded: … (tree budget)`); non-retryable; the run stops.
   */
  TreeBudgetExceeded: 'TreeBudgetExceeded',
  /** The root of the run's tree did not answer a budget reservation for two minutes (gone or unreachable); retryable. */
  TreeBudgetUnavailable: 'TreeBudgetUnavailable',
  /**
   * A model request waited for its provider limits until its attempt's time was nearly up, or the key's limiter could
   * not be reached for two minutes (docs/provider-limits.md); retryable: the next attempt waits on in the same place.
   */
  ProviderLimitWait: 'KeelProviderLimitWait',

  // --- batches (agentBatchWorkflow)
  /** The batch input is malformed; non-retryable; the message names every bad field. */
  InvalidAgentBatchInput: 'InvalidAgentBatchInput',

  // --- tool activities
  /**
   * A worker-local tool call placed as a local activity ran on a worker that is not the run's home: refused before
   * anything ran; the workflow runs the call as an activity on the home queue instead (docs/local-tools.md).
   */
  NotHome: 'KeelNotHome',
  /** A tool activity was asked for a call that is not in the transcript it names (a bug in Keel); non-retryable. */
  Internal: 'KeelInternal',
  /**
   * An idempotent tool's connection to what runs it failed mid-call (an MCP server that exited, an HTTP server that
   * refused): the activity attempt fails, retryable, so the activity's retry policy runs the call again; the message
   * names the server and what happened (it is the call's error result once the attempts are spent).
   */
  ToolTransport: 'KeelToolTransport',

  // --- compaction
  /** The `compact` activity could not summarise the older messages (the model failed or answered with no text). */
  CompactionFailed: 'CompactionFailed',

  // --- model calls (activities/model/classify-error.ts decides which; retryable unless noted)
  /** HTTP 429. */
  ModelRateLimit: 'ModelError.RateLimit',
  /** A 429 that the provider calls quota or billing; non-retryable. */
  ModelQuotaExceeded: 'ModelError.QuotaExceeded',
  /** HTTP 5xx. */
  ModelServer: 'ModelError.Server',
  /** HTTP 408, or the request timed out. */
  ModelTimeout: 'ModelError.Timeout',
  /** HTTP 409. */
  ModelConflict: 'ModelError.Conflict',
  /** No response (reset, refused) or the stream broke. */
  ModelNetwork: 'ModelError.Network',
  /** HTTP 400, 422 or another 4xx; non-retryable. */
  ModelBadRequest: 'ModelError.BadRequest',
  /** HTTP 401 or 403, or no credentials for the provider; non-retryable. */
  ModelAuth: 'ModelError.Auth',
  /** HTTP 404, or no provider or scripted model of that name on the worker; non-retryable. */
  ModelNotFound: 'ModelError.NotFound',
  /** The provider refused the context as longer than the model's window (or HTTP 413): compact, then retry once. */
  ModelContextOverflow: 'ModelError.ContextOverflow',
  /** The reply stopped on a refusal or a content filter; non-retryable. */
  ModelContentFilter: 'ModelError.ContentFilter',
  /** pi-ai does not know the model id; non-retryable. */
  ModelUnknownModel: 'ModelError.UnknownModel',
  /** A `TypeError`, `ReferenceError` or `SyntaxError` (not JSON.parse's) in a provider; non-retryable. */
  ModelProgrammingError: 'ModelError.ProgrammingError',
  /** The provider returned something that is not a well-formed assistant message; non-retryable. */
  ModelInvalidResponse: 'ModelError.InvalidResponse',
  /**
   * The reply streamed more than {@link MAX_REPLY_SIZE} characters, or its message is more than that many bytes of
   * JSON: more than one Temporal payload carries. `callModel` stopped the request; non-retryable.
   */
  ModelResponseTooLarge: 'ModelError.ResponseTooLarge',
  /** Any other failure that the provider does not call transient; non-retryable. */
  ModelUnknown: 'ModelError.Unknown',
  /** The scripted model has no reply for the request, or a scripted `fail` gave no type; non-retryable. */
  ModelScripted: 'ModelError.Scripted',
} as const;

/**
 * The failure types whose first detail is the run's `AgentRunResult` (status `failed`): `AgentRunFailed` and
 * `InvalidAgentOutput`. Readers of a failed run's usage and transcript (batches, graders, the CLI) take it from there.
 */
export function failureCarriesResult(type: string | undefined | null): boolean {
  return type === ErrorType.AgentRunFailed || type === ErrorType.InvalidAgentOutput;
}

/** A failure type Keel uses (a value of {@link ErrorType}). */
export type ErrorTypeName = (typeof ErrorType)[keyof typeof ErrorType];

/** The failure types of model calls (`ModelError.*`). */
export type ModelErrorType = Extract<ErrorTypeName, `ModelError.${string}`>;
