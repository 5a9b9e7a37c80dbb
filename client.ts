/**
 * `keel/client`: what a service that starts, steers and reads runs needs — `AgentClient`, the batch API, the run's
 * types, the connection settings and Keel's data converter. Nothing here loads `@temporalio/worker` (or the workflow
 * bundler and the native runtime it brings): a test imports this entry in a child process and checks that
 * (test/temporal/package.test.ts). Workers import `keel/worker`; workflow code imports `keel/workflow`.
 */
export {
  AGENT_WORKFLOW_TYPE,
  AgentClient,
  AgentRunHandle,
  InvalidAgentInputError,
  InvalidSignalError,
  UpdateRejectedError,
  type ConnectOptions,
  type StartOptions,
} from './client/agent-client.js';
export { AgentBatchHandle, paginate, startBatchWorkflow, type StartBatchOptions } from './client/batch-client.js';
export {
  BATCH_WORKFLOW_TYPE,
  type AgentBatchInput,
  type AgentBatchResult,
  type BatchProgress,
  type BatchTaskResult,
} from './common/batch-definitions.js';
export {
  keelClientDataConverter,
  keelDataConverter,
  PayloadStoreMissingError,
  type PayloadStorageOption,
  type S3PayloadStorage,
} from './common/payload-storage.js';
export {
  resolveConnection,
  connectOptions,
  type ConnectionSettings,
  type ResolvedConnection,
  type TlsSettings,
} from './common/connection.js';
export { DEFAULT_TASK_QUEUE } from './common/task-queues.js';
export { ErrorType } from './common/errors.js';
export type {
  ApprovalDecisionInput,
  ApprovalRecord,
  ApprovalVerdict,
  ClosedAck,
  InterruptAck,
  PendingApproval,
  QueuedAck,
} from './common/updates.js';
export { AGENT_RUN_INPUT_SCHEMA } from './common/run.js';
export type { AgentRunInput, AgentRunResult, AgentRunState, IncomingMessage, MessagesPage } from './common/run.js';
export type * from './common/messages.js';
export type { AgentEvent, LoggedEvent, EventsPage, ModelHeartbeat, ToolHeartbeat } from './common/events.js';
export type { StreamOptions } from './client/run-stream.js';
export {
  StreamView,
  STREAM_OFFSET_SCALE,
  type StreamEvent,
  type MessageUpdateEvent,
  type AttemptResetEvent,
  type ToolExecutionUpdateEvent,
} from './common/stream.js';
