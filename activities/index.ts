/**
 * `createActivities({ tools, models, hooks, transcript })` → Keel's activity functions. Dependencies come in, so tests
 * pass fakes instead of mocking globals.
 */
import type { ClosedChild } from './batch-children.js';
import type { AgentHooks } from './hooks.js';
import { createCallModel } from './model/call-model.js';
import { createCompact } from './model/compact.js';
import type { ModelRegistry } from './model/provider.js';
import { createStartRun } from './start-run.js';
import type { ToolDefinition } from './tools/define-tool.js';
import type { RunMcpTools } from './mcp/run-tools.js';
import { createToolActivities } from './tools/tool-activities.js';
import { TranscriptCache, type TranscriptSource } from './transcript.js';

export interface KeelActivityDeps {
  tools?: ToolDefinition[];
  models?: ModelRegistry;
  hooks?: AgentHooks;
  /** Where activities read transcripts (normally the workflow's `messages` query). */
  transcript: TranscriptSource;
  /** Whether the namespace has Keel's search attributes (default: assume not). */
  searchAttributesReady?: () => Promise<boolean>;
  /** Asks Temporal to cancel a run (normally `client.workflow.getHandle(id, runId).cancel()`). */
  requestCancel: (workflowId: string, runId: string) => Promise<void>;
  /** Payloads over the threshold go to external storage on this worker (so any transcript can be carried). */
  largePayloads?: boolean;
  /** This worker's own task queue for worker-local tools (worker affinity), once it has one. */
  homeQueue?: () => string | undefined;
  /** Tools run on other workers (role `model`): startRun reports none for local activities. */
  toolsElsewhere?: boolean;
  /** The closed ones among a batch's children, with their outcomes (normally activities/batch-children.ts). */
  closedChildren?: (workflowIds: string[]) => Promise<ClosedChild[]>;
  /** The worker's MCP servers' tools (activities/mcp/): resolved and recorded by `startRun`, used by the others. */
  mcp?: RunMcpTools;
}

export function createActivities(deps: KeelActivityDeps) {
  const tools = new Map<string, ToolDefinition>();
  for (const t of deps.tools ?? []) {
    if (tools.has(t.name)) throw new Error(`Two tools are named "${t.name}"; tool names must be unique on a worker.`);
    tools.set(t.name, t);
  }
  const models = deps.models ?? {};
  const hooks = deps.hooks ?? {};
  const transcript = new TranscriptCache(deps.transcript);
  return {
    startRun: createStartRun({
      tools,
      models,
      searchAttributesReady: deps.searchAttributesReady ?? (async () => false),
      largePayloads: deps.largePayloads === true,
      homeQueue: deps.homeQueue,
      toolsElsewhere: deps.toolsElsewhere === true,
      mcp: deps.mcp,
    }),
    callModel: createCallModel({ models, tools, hooks, transcript, mcp: deps.mcp }),
    compact: createCompact({ models, transcript }),
    ...createToolActivities({ tools, hooks, transcript, homeQueue: deps.homeQueue, mcp: deps.mcp }),
    /**
     * Activity `workerHome` (on the run's task queue): the home queue of the worker that runs it. A run whose home
     * worker is gone asks for a new home with it (worker affinity, README).
     */
    async workerHome(): Promise<{ homeQueue?: string }> {
      const homeQueue = deps.homeQueue?.();
      return homeQueue ? { homeQueue } : {};
    },
    /**
     * Activity `requestCancel`: a `cancel` signal ends the run as Canceled. Temporal closes a workflow as Canceled
     * only after a cancellation request, and a workflow may not request its own, so an activity asks for it.
     */
    async requestCancel(input: { workflowId: string; runId: string }): Promise<void> {
      await deps.requestCancel(input.workflowId, input.runId);
    },
    /**
     * Activity `closedBatchChildren`: a sliding-window batch reconciles its window — which of these children are
     * closed (terminated, timed out, or closed without a report), each with its compact outcome.
     */
    async closedBatchChildren(input: { workflowIds: string[] }): Promise<ClosedChild[]> {
      return deps.closedChildren ? deps.closedChildren(input.workflowIds) : [];
    },
  };
}

export type KeelActivities = ReturnType<typeof createActivities>;
