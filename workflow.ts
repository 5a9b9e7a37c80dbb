/**
 * `keel/workflow`: sandbox-safe exports, for workflow code of your own that runs Keel's workflows as children
 * (`executeChild(agentWorkflow, …)`) or signals, updates and queries them (`followUpSignal`, `stateQuery`, …).
 *
 * Why a separate entry: workflow code runs in Temporal's deterministic sandbox, bundled by webpack, where Node
 * built-ins and the worker's or client's packages are refused or break determinism. The package root (`keel`) and
 * `keel/client` load `@temporalio/client`, `node:fs` and the payload stores; `keel/worker` loads `@temporalio/worker`.
 * Everything reachable from this file is deterministic and free of Node APIs: the workflow functions (the same ones a
 * Keel worker registers, workflows/index.ts), their signal, Update and query definitions, and plain types.
 */
export { agentWorkflow, agentBatchPageWorkflow, agentBatchWorkflow } from './workflows/index.js';
export * from './workflows/definitions.js';
export {
  BATCH_PAGE_WORKFLOW_TYPE,
  BATCH_WORKFLOW_TYPE,
  progressQuery,
  resultsQuery,
  type AgentBatchInput,
  type AgentBatchResult,
  type BatchProgress,
  type BatchTaskResult,
} from './common/batch-definitions.js';
export { ErrorType } from './common/errors.js';
export type { AgentRunInput, AgentRunResult, AgentRunState, IncomingMessage, MessagesPage } from './common/run.js';
export type * from './common/messages.js';
export type { AgentEvent, LoggedEvent, EventsPage } from './common/events.js';
