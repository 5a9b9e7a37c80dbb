/**
 * The sub-agents each run recorded at its start (`startRun`, `ToolInfo.agent`), for the model and tool activities of
 * a worker that does not register them itself: read once per run from its `subAgents` query and kept (the newest
 * 1,000 runs). The description and arguments schema the model is shown, and the call validated against, are the
 * recorded ones.
 */
import type { SubAgentRecord } from '../../common/wire.js';
import type { ToolDefinition } from '../tools/define-tool.js';
import { agentTool } from './define-agent.js';

const MAX_RUNS = 1_000;

export class RunSubAgents {
  private readonly runs = new Map<string, Promise<(SubAgentRecord & { name: string })[]>>();

  constructor(private readonly query: (workflowId: string) => Promise<(SubAgentRecord & { name: string })[]>) {}

  /**
   * The sub-agent `name` as run `workflowId` recorded it, as a tool; undefined when the run recorded none so named, or
   * its query failed (the caller then treats the name as it treats an unknown tool). Never throws.
   */
  async tool(workflowId: string, name: string): Promise<ToolDefinition | undefined> {
    let records = this.runs.get(workflowId);
    if (!records) {
      records = this.query(workflowId);
      this.runs.set(workflowId, records);
      while (this.runs.size > MAX_RUNS) this.runs.delete(this.runs.keys().next().value as string);
      records.catch(() => this.runs.get(workflowId) === records && this.runs.delete(workflowId));
    }
    const r = (await records.catch(() => [])).find((x) => x.name === name);
    return (
      r &&
      agentTool({
        name: r.name,
        description: r.description,
        systemPrompt: r.systemPrompt,
        tools: r.tools,
        ...(r.typedInput ? { input: r.parameters } : {}),
      })
    );
  }
}
