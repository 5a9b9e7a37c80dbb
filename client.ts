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
  InvalidAgentOutputError,
  InvalidSignalError,
  UpdateRejectedError,
  type ConnectOptions,
  type OutputOf,
  type StartOptions,
  type TypedRunResult,
} from './client/agent-client.js';
export { forkInput, InvalidForkError, planFork, type ForkOptions, type ForkPlan } from './client/fork/plan-fork.js';
export { assistantCount, forkPoint, type ForkPoint } from './client/fork/fork-point.js';
export { forkMemoOf, forksQuery, listForks, type ListedFork } from './client/fork/fork-links.js';
export { FORK_MEMO_KEY, forkLine, type ForkBase, type ForkMemo } from './common/fork.js';
export {
  ReplayHandle,
  type ReplayOptions,
  type ReplayReport,
  type ReplaySource,
} from './client/replay/start-replay.js';
export { compareRuns, type RunReplayReport } from './client/replay/run-report.js';
export { readRecordedRun, type RecordedRun } from './client/replay/recorded-run.js';
export {
  LIVE_TOOLS,
  matchRecorded,
  notInRecordText,
  recordedCalls,
  type LiveTools,
  type RecordedCall,
  type ReplaySpec,
} from './common/replay.js';
export {
  AgentBatchHandle,
  paginate,
  startBatchWorkflow,
  type StartBatchOptions,
  type VariantTask,
} from './client/batch-client.js';
export {
  BatchRetryError,
  DEFAULT_RETRY_STATUSES,
  mergedOutcomes,
  retriesOf,
  retryBatchId,
  RETRY_MEMO_KEY,
  startRetryBatch,
  type BatchRetry,
  type BatchRetryMemo,
  type MergedOutcome,
  type RetryBatchOptions,
  type RetryStatus,
} from './client/batch-retry.js';
export {
  InvalidScheduleError,
  recentScheduled,
  SCHEDULE_MEMO_KEY,
  scheduledIdPrefix,
  triggerSchedule,
  type AgentScheduleMemo,
  type AgentScheduleOptions,
  type ScheduledWorkflow,
  type ScheduleTrigger,
} from './client/schedule-client.js';
export {
  BUILTIN_GRADERS,
  type BatchTask,
  type BatchVariant,
  type Grade,
  type GradingSummary,
  type VariantSummary,
} from './common/grading.js';
export { formatGradeTable, gradeRows, variantDurations, type GradeRow } from './client/batch-report.js';
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
} from './node-common/payload-storage.js';
export {
  DecryptionError,
  EncryptionCodec,
  NoKeyRingError,
  parseKeyRing,
  readKeyRing,
  type EncryptionOption,
  type KeyRing,
} from './node-common/encryption.js';
export {
  resolveConnection,
  connectOptions,
  type ConnectionSettings,
  type ResolvedConnection,
  type TlsSettings,
} from './node-common/connection.js';
export { DEFAULT_TASK_QUEUE } from './common/task-queues.js';
export { mintApprovalToken, type MintApprovalTokenOptions } from './client/approval-token.js';
export { APPROVAL_CLAIMS, DEFAULT_APPROVAL_AUDIENCE, type ApprovalVerb } from './common/approval-claims.js';
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
/** The run's query definitions, for `handle.query(stateQuery)` (the `keel` CLI reads runs through them). */
export { eventsQuery, messagesQuery, stateQuery } from './workflows/definitions.js';
export { AGENT_RUN_INPUT_SCHEMA } from './common/run.js';
export type { AgentRunInput, AgentRunResult, AgentRunState, IncomingMessage, MessagesPage } from './common/run.js';
export type * from './common/messages.js';
export type { AgentEvent, LoggedEvent, EventsPage, ModelHeartbeat, ToolHeartbeat } from './common/events.js';
export {
  createCodecServer,
  CodecServerConfigError,
  DEFAULT_CODEC_SERVER_PORT,
  type CodecServer,
  type CodecServerOptions,
} from './client/codec-server.js';
export type { StreamOptions } from './client/run-stream.js';
export {
  StreamView,
  STREAM_OFFSET_SCALE,
  StreamOffset,
  type StreamOffsetKind,
  type StreamEvent,
  type MessageUpdateEvent,
  type AttemptResetEvent,
  type ToolExecutionUpdateEvent,
} from './common/stream.js';
export { agUiFetchHandler, agUiHandler, type AgUiOptions } from './client/ag-ui/http.js';
