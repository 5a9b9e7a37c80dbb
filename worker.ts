/**
 * `keel/worker`: what a process that runs agents needs — `createAgentWorker` (or `keelPlugin` for a `Worker` of your
 * own), tools (`defineTool`, the built-ins), models (`scriptedModel`, `piAiProvider`), hooks and worker roles. It
 * loads `@temporalio/worker` (the native runtime and the workflow bundler); a service that only starts runs imports
 * `keel/client` instead. Temporal's dev server (`startDevServer`) is in `keel/dev`: a production worker does not load
 * `@temporalio/testing` nor the Temporal CLI provisioning scripts.
 */
export { defineTool } from './activities/tools/define-tool.js';
export { defineAgent, type AgentDefinition } from './activities/agents/define-agent.js';
export {
  defineGrader,
  BUILTIN_GRADER_DEFINITIONS,
  type GraderContext,
  type GraderDefinition,
} from './activities/graders.js';
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
export type {
  ApprovalAuthentication,
  ApprovalsOptions,
  AuthorizeApproval,
  AuthorizeApprovalInput,
} from './activities/approvals/verify-approval.js';
export type { ModelOptions, ModelProvider, ModelRegistry, ModelRequest } from './activities/model/provider.js';
export { scriptedModel, type Script, type ScriptedReply, type ScriptedRule } from './activities/model/scripted.js';
export { piAiProvider } from './activities/model/pi-ai.js';
/** MCP servers (README "MCP servers"): the `mcpServers` option's types, and the `{ "mcpServers": … }` file loader. */
export {
  loadMcpConfig,
  mcpServersErrors,
  type McpHttpServer,
  type McpServerConfig,
  type McpServers,
  type McpStdioServer,
  type McpToolOverride,
} from './activities/mcp/config.js';
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
export { SEALED_FAILURES_PATH } from './worker/workflow-code.js';
export { DEFAULT_TASK_QUEUE, toolTaskQueue, WORKER_ROLES, type WorkerRole } from './common/task-queues.js';
export { keelDataConverter, type PayloadStorageOption, type S3PayloadStorage } from './node-common/payload-storage.js';
export {
  DecryptionError,
  EncryptionCodec,
  NoKeyRingError,
  parseKeyRing,
  readKeyRing,
  type EncryptionOption,
  type KeyRing,
} from './node-common/encryption.js';
