/**
 * A Keel worker started by `keel dev` or `keel worker` from its flags: the Temporal runtime's quiet logs, the tools,
 * models, graders, sub-agents and MCP servers (worker/load-modules.ts), the approvals, and `createAgentWorker` — all
 * loaded when a worker starts, so the other commands never load `@temporalio/worker`.
 */
import type { ToolDefinition } from '../worker.js';
import type { ConnectionSettings } from '../client.js';
import type { McpServers } from '../worker.js';
import { approvalsFromFlags, withApproval } from '../worker/approvals/flags.js';
import type { GlobalOptions } from './context.js';
import type { WorkerFlags } from './worker-flags.js';
import { parseLimitSpecs } from '../common/limits/definition.js';

/** The Temporal runtime: quiet logs (cli/worker-log.ts), and with `metrics` its Prometheus endpoint (`/metrics`) at that host:port. */
export async function quietRuntime(metrics?: { host: string; port: number }): Promise<void> {
  const { Runtime, DefaultLogger } = await import('@temporalio/worker');
  const { keelLogFunction, keelLogLevel } = await import('./worker-log.js');
  const level = keelLogLevel();
  try {
    Runtime.install({
      // a failed activity on one line (its task token, stack and cause at KEEL_LOG_LEVEL=DEBUG)
      logger: new DefaultLogger(level, keelLogFunction(level)),
      ...(metrics
        ? { telemetryOptions: { metrics: { prometheus: { bindAddress: `${metrics.host}:${metrics.port}` } } } }
        : {}),
    });
  } catch {
    // already installed
  }
}

/** Tools: the built-in and `--tools-module` ones (worker/load-modules.ts), `--approve`'s waiting for approval. */
export async function loadApprovedTools(flags: WorkerFlags): Promise<ToolDefinition[]> {
  const { loadTools } = await import('../worker/load-modules.js');
  return withApproval(await loadTools(flags), flags.approve ?? []);
}

/** `settings`: how the worker connects (the global connection flags; `keel dev`: its own plaintext server). */
export async function startWorker(
  g: GlobalOptions,
  flags: WorkerFlags,
  settings: ConnectionSettings,
  loaded?: ToolDefinition[],
  dev = false,
) {
  const { createAgentWorker } = await import('../worker.js');
  const { loadAgents, loadGraders, loadMcpServers, loadModels } = await import('../worker/load-modules.js');
  const tools = loaded ?? (await loadApprovedTools(flags));
  const approvals = approvalsFromFlags(flags, tools, dev);
  const mcpServers = await loadMcpServers(flags);
  const models = await loadModels(flags);
  const workerOptions = {
    ...(flags.maxConcurrentActivities ? { maxConcurrentActivityTaskExecutions: flags.maxConcurrentActivities } : {}),
    ...(flags.maxConcurrentWorkflowTasks
      ? { maxConcurrentWorkflowTaskExecutions: flags.maxConcurrentWorkflowTasks }
      : {}),
  };
  const versioning = {
    deploymentName: flags.deploymentName,
    buildId: flags.buildId,
    makeCurrent: flags.makeCurrent !== false,
  };
  const graders = await loadGraders(flags);
  const agents = await loadAgents(flags);
  const worker = await createAgentWorker({
    ...settings,
    taskQueue: g.taskQueue,
    tools,
    ...(graders.length ? { graders } : {}),
    ...(agents.length ? { agents } : {}),
    models,
    workerOptions,
    versioning,
    encryption: g.encryption,
    ...(flags.role ? { role: flags.role } : {}),
    ...(approvals ? { approvals } : {}),
    ...(mcpServers ? { mcpServers } : {}),
    ...(flags.providerLimit?.length ? { providerLimits: parseLimitSpecs(flags.providerLimit) } : {}),
  });
  return { worker, tools, agents, mcpServers: Object.keys(mcpServers ?? {}) };
}

/** A worker `startWorker` started. */
export type StartedWorker = Awaited<ReturnType<typeof startWorker>>['worker'];

/** The MCP servers of `flags`' `--mcp` files, or undefined when there is none. */
export async function mcpServersOf(flags: WorkerFlags): Promise<McpServers | undefined> {
  const { loadMcpServers } = await import('../worker/load-modules.js');
  return loadMcpServers(flags);
}

/**
 * One line per MCP server of `flags` (started or reached here, then closed, as `keel tools` does): how many tools it
 * lists, or why it cannot start — so `keel dev` never says ready about a server that is broken.
 */
export async function mcpServerLines(flags: WorkerFlags): Promise<string[]> {
  const servers = await mcpServersOf(flags);
  if (!servers) return [];
  const { listMcpTools } = await import('../worker/load-modules.js');
  return (await listMcpTools(servers)).map(({ server, tools, errors }) =>
    errors.length
      ? `[keel] MCP server ${server}: cannot start: ${errors.map((e) => e.replace(/^tools: "[^"]*": /, '')).join('; ')}`
      : `[keel] MCP server ${server}: ${tools.length} tool${tools.length === 1 ? '' : 's'}`,
  );
}

/** `, MCP servers a, b (…)` for the start line, or nothing. */
export function mcpLine(servers: string[]): string {
  return servers.length ? `, MCP servers ${servers.join(', ')} (tools named <server>__<tool>)` : '';
}

/** `tools a, b` of the start line, or `tools (none)`. */
export function toolNames(tools: { name: string }[]): string {
  return tools.map((t) => t.name).join(', ') || '(none)';
}
