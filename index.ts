/** Keel's public API. */
export { defineTool } from './activities/tools/define-tool.js';
export type {
  AgentToolResult,
  ToolApproval,
  ToolContext,
  ToolDefinition,
  ToolRetry,
  ToolUpdateCallback,
  JsonSchema,
  ToolArguments,
  ToolParameters,
} from './activities/tools/define-tool.js';
/** TypeBox (`Type.Object(...)`, `Static<...>`), for tool `parameters` whose argument types `defineTool` infers. */
export { Type, type Static } from 'typebox';
export type {
  AgentHooks,
  AfterToolCallContext,
  AfterToolCallResult,
  BeforeToolCallContext,
  BeforeToolCallResult,
  NeedsApprovalContext,
  TransformContextInfo,
} from './activities/hooks.js';
export type { ModelOptions, ModelProvider, ModelRegistry, ModelRequest } from './activities/model/provider.js';
export { scriptedModel, type Script, type ScriptedReply, type ScriptedRule } from './activities/model/scripted.js';
export { piAiProvider } from './activities/model/pi-ai.js';
export {
  builtinTools,
  DEFAULT_ACTIVE_TOOLS,
  RunWorkspaces,
  type BuiltinToolsOptions,
  type RunWorkspacesOptions,
  type SandboxLimits,
  type SandboxOptions,
  type SandboxSetting,
} from './activities/tools/builtin/index.js';
export {
  createAgentWorker,
  type AgentWorker,
  type AgentWorkerOptions,
  type PassThroughWorkerOptions,
} from './worker/create-worker.js';
export { keelPlugin, KeelPlugin, WORKFLOWS_PATH, type KeelPluginOptions } from './worker/plugin.js';
export { DEFAULT_TASK_QUEUE, toolTaskQueue, WORKER_ROLES, type WorkerRole } from './common/task-queues.js';
export {
  resolveConnection,
  connectOptions,
  type ConnectionSettings,
  type ResolvedConnection,
  type TlsSettings,
} from './common/connection.js';
export {
  AgentClient,
  AgentRunHandle,
  InvalidAgentInputError,
  InvalidSignalError,
  UpdateRejectedError,
} from './client/agent-client.js';
export {
  PayloadStoreMissingError,
  type PayloadStorageOption,
  type S3PayloadStorage,
} from './common/payload-storage.js';
export { AgentBatchHandle, paginate, startBatchWorkflow, type StartBatchOptions } from './client/batch-client.js';
export type { AgentBatchInput, AgentBatchResult, BatchProgress, BatchTaskResult } from './client/batch-client.js';
export type {
  ApprovalDecisionInput,
  ApprovalRecord,
  ApprovalVerdict,
  ClosedAck,
  InterruptAck,
  PendingApproval,
  QueuedAck,
} from './common/updates.js';
export { startDevServer } from './client/dev-server.js';
export { AGENT_RUN_INPUT_SCHEMA } from './common/run.js';
export type { AgentRunInput, AgentRunResult, AgentRunState, IncomingMessage, MessagesPage } from './common/run.js';
export type * from './common/messages.js';
export type { AgentEvent, LoggedEvent, EventsPage, ModelHeartbeat, ToolHeartbeat } from './common/events.js';
