/**
 * The MCP tools of each run as it recorded them (`startRun`), for the model and tool activities: from this worker's
 * memory when it ran the run's `startRun`, else read once from the run (its `mcpTools` query; after a worker restart,
 * on another worker, after a continue-as-new). The server's current listing is never used for a run's tool.
 */
import type { ToolDefinition } from '../tools/define-tool.js';
import type { McpToolRecord } from '../../common/wire.js';
import { splitMcpName, type McpToolSource } from './tool-source.js';

const MAX_RUNS = 1_000;

export class RunMcpTools {
  private readonly runs = new Map<string, Promise<McpToolRecord[]>>();

  constructor(
    readonly source: McpToolSource,
    /** The run's recorded MCP tools (normally its `mcpTools` query). */
    private readonly query: (workflowId: string) => Promise<McpToolRecord[]>,
  ) {}

  /** Called by `startRun`: this run's records. */
  remember(workflowId: string, records: McpToolRecord[]): void {
    this.put(workflowId, Promise.resolve(records));
  }

  /** The Keel tool `name` of run `workflowId`, when it is an MCP tool the run recorded. */
  async tool(workflowId: string, name: string): Promise<ToolDefinition | undefined> {
    if (!splitMcpName(name, this.source.servers)) return undefined;
    let records = this.runs.get(workflowId);
    if (!records) {
      records = this.query(workflowId);
      this.put(workflowId, records);
      records.catch(() => this.runs.get(workflowId) === records && this.runs.delete(workflowId));
    }
    const r = (await records).find((x) => `${x.server}__${x.tool}` === name);
    return r && this.source.definition(r);
  }

  private put(workflowId: string, records: Promise<McpToolRecord[]>): void {
    this.runs.delete(workflowId);
    this.runs.set(workflowId, records);
    while (this.runs.size > MAX_RUNS) this.runs.delete(this.runs.keys().next().value as string);
  }
}
