/**
 * The tool a run names, from its three sources in order: the worker's own tools (and its sub-agents), the run's
 * recorded MCP tools (activities/mcp/), then the run's recorded sub-agents for a worker that does not register them
 * (activities/agents/run-agents.ts). Used by the model call (the tools it offers) and the tool activities (the tool a
 * call runs), so both see the same tool under a name.
 */
import type { RunSubAgents } from '../agents/run-agents.js';
import type { RunMcpTools } from '../mcp/run-tools.js';
import type { ToolDefinition } from './define-tool.js';

export class ToolLookup {
  constructor(
    /** The worker's own tools and sub-agents, by name. */
    readonly own: ReadonlyMap<string, ToolDefinition>,
    private readonly mcp?: RunMcpTools,
    private readonly agents?: RunSubAgents,
  ) {}

  /** The tool `name` of run `workflowId`: own, else MCP, else a recorded sub-agent; undefined when none has it. */
  async tool(workflowId: string, name: string): Promise<ToolDefinition | undefined> {
    return (
      this.own.get(name) ?? (await this.mcp?.tool(workflowId, name)) ?? (await this.agents?.tool(workflowId, name))
    );
  }

  /** The run's MCP tool `name`, undefined when there is none or the lookup fails (never throws). */
  async mcpTool(workflowId: string, name: string): Promise<ToolDefinition | undefined> {
    return this.mcp?.tool(workflowId, name).catch(() => undefined);
  }
}
