/**
 * `createActivities({ tools, models, hooks, transcript })` → Keel's activity functions. Dependencies come in, so tests
 * pass fakes instead of mocking globals.
 */
import { createCheckTreeMember } from './agents/check-tree-member.js';
import type { VerifyApprovalInput, VerifyApprovalResult } from '../common/approval-claims.js';
import type { Client } from '@temporalio/client';
import type { ClosedChild } from './batch-children.js';
import { createGradeBatchTask, type GraderDefinition } from './graders.js';
import type { AgentHooks } from './hooks.js';
import { createCallModel } from './model/call-model.js';
import { createCompact } from './model/compact.js';
import type { ModelRegistry } from './model/provider.js';
import { UNSEALED_BATCH_START } from '../node-common/encryption.js';
import { createStartRun } from './start-run.js';
import { NOT_VERIFYING } from './approvals/verify-approval.js';
import type { ToolDefinition } from './tools/define-tool.js';
import type { RunMcpTools } from './mcp/run-tools.js';
import { createToolActivities, type ToolActivityDeps } from './tools/tool-activities.js';
import { ReplayRecords } from './replay/replay-records.js';
import { ToolLookup } from './tools/tool-lookup.js';
import { agentTool, type AgentDefinition } from './agents/define-agent.js';
import { checkRunOutput, checkSubAgentOutput } from './agents/check-output.js';
import { createAwaitSubAgentRun } from './agents/await-run.js';
import type { RunSubAgents } from './agents/run-agents.js';
import { TranscriptCache, type TranscriptSource } from './transcript.js';
import { ProviderLimitsGate } from './limits/gate.js';
import type { ProviderLimits } from '../common/limits/definition.js';
import type { BatchStartCheck } from '../common/wire.js';
import type { FleetStreamStore } from '../node-common/fleet-stream/store.js';

export interface KeelActivityDeps {
  tools?: ToolDefinition[];
  /** Sub-agents (`defineAgent`): runs name them in `tools` like tools (README "Sub-agents"). */
  agents?: AgentDefinition[];
  /** The runs' recorded sub-agents, for runs naming one this worker does not register (activities/agents/run-agents.ts). */
  recordedAgents?: RunSubAgents;
  /** Deepest sub-agent a run started here may start (a child of the root has depth 1); default 3. */
  maxAgentDepth?: number;
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
  /**
   * The worker caches no workflow (`maxCachedWorkflows: 0`), so a local activity in flight is dropped at each eviction and
   * its workflow task times out (docs/local-tools.md#limits): `startRun` and `checkBatchStart` say so, and the run or
   * batch then starts no local activity (no placed tool, no lean child).
   */
  noLocalActivities?: () => boolean;
  /**
   * On an encrypting worker: the line that fails a run whose start input reached Temporal unencrypted (worker/
   * sealed-start.ts), else undefined. Checked by `startRun` before anything else.
   */
  unsealedStart?: () => Promise<string | undefined>;
  /** The closed ones among a batch's children, with their outcomes (normally activities/batch-children.ts). */
  closedChildren?: (workflowIds: string[]) => Promise<ClosedChild[]>;
  /**
   * Signed approvals (README "Who may approve"): `verified` makes runs started here accept only decisions whose token
   * `verifyApproval` accepts (activities/approvals/verify-approval.ts). Default: unverified, every token refused.
   */
  approvals?: {
    verified: boolean;
    verifyApproval: (input: VerifyApprovalInput) => Promise<VerifyApprovalResult>;
  };
  /** Graders registered on this worker (`defineGrader`), besides the built-ins. */
  graders?: GraderDefinition[];
  /** The client the grading activity reads a batch child's result with (normally the activity's own). */
  client?: () => Client;
  /** The worker's MCP servers' tools (activities/mcp/): resolved and recorded by `startRun`, used by the others. */
  mcp?: RunMcpTools;
  /** Provider limits shared by the namespace's runs (docs/provider-limits.md): model requests ask before they call. */
  providerLimits?: ProviderLimits;
  /** The fleet stream transport's store (docs/live-output.md#fleet-transport): `callModel` appends its deltas there too, the tool activities their updates. */
  fleet?: FleetStreamStore;
}

/** The worker's own tools and sub-agents by name; two of one name are refused. */
function ownTools(deps: KeelActivityDeps): Map<string, ToolDefinition> {
  const tools = new Map<string, ToolDefinition>();
  for (const t of [...(deps.tools ?? []), ...(deps.agents ?? []).map(agentTool)]) {
    if (tools.has(t.name))
      throw new Error(`Two tools or sub-agents are named "${t.name}"; names must be unique on a worker.`);
    tools.set(t.name, t);
  }
  return tools;
}

/** The records a replaying run's tool calls are served from (activities/replay/): they need the worker's client. */
function replays(deps: KeelActivityDeps): ReplayRecords | undefined {
  return deps.client ? new ReplayRecords(deps.client) : undefined;
}

/** The worker's client for `activity`, which throws (naming it) on a worker built without one. */
function clientFor(deps: KeelActivityDeps, activity: string): () => Client {
  return () => {
    if (!deps.client) throw new Error(`${activity} needs a Temporal client: this worker was built without one`);
    return deps.client();
  };
}

/** What the tool activities take of `deps` besides the tools, hooks and transcript. */
function toolDeps(deps: KeelActivityDeps): Omit<ToolActivityDeps, 'tools' | 'hooks' | 'transcript'> {
  return { homeQueue: deps.homeQueue, replay: replays(deps), ...(deps.fleet ? { fleet: deps.fleet } : {}) };
}

export function createActivities(deps: KeelActivityDeps) {
  const tools = ownTools(deps);
  const lookup = new ToolLookup(tools, deps.mcp, deps.recordedAgents);
  const models = deps.models ?? {};
  const hooks = deps.hooks ?? {};
  const transcript = new TranscriptCache(deps.transcript);
  const limits =
    deps.providerLimits && Object.keys(deps.providerLimits).length > 0
      ? new ProviderLimitsGate(deps.providerLimits)
      : undefined;
  const fleet = deps.fleet ? { fleet: deps.fleet } : {};
  return {
    startRun: createStartRun({
      tools,
      models,
      searchAttributesReady: deps.searchAttributesReady ?? (async () => false),
      largePayloads: deps.largePayloads === true,
      homeQueue: deps.homeQueue,
      toolsElsewhere: deps.toolsElsewhere === true,
      noLocalActivities: deps.noLocalActivities,
      unsealedStart: deps.unsealedStart,
      verifiedApprovals: deps.approvals?.verified === true,
      mcp: deps.mcp,
      ...(deps.maxAgentDepth !== undefined ? { maxAgentDepth: deps.maxAgentDepth } : {}),
      approvalHook: hooks.needsApproval !== undefined,
      callHook: hooks.beforeToolCall !== undefined,
    }),
    callModel: createCallModel({
      models,
      tools: lookup,
      hooks,
      transcript,
      ...(limits ? { limits } : {}),
      ...fleet,
    }),
    compact: createCompact({ models, transcript, ...(limits ? { limits } : {}) }),
    ...createToolActivities({ tools: lookup, hooks, transcript, ...toolDeps(deps) }),
    /**
     * Activity `checkBatchStart`, at a batch's first start (since 0.6.2): on an encrypting worker, the line a batch
     * started without encryption fails with (its task list is in clear in history), else undefined. Runs again on
     * retry; reads the batch's first history event. From 0.12.0, on a worker that caches no workflow and would start the
     * batch's tasks fine: `{ noLocalActivities: true }` (the batch then starts them without a local activity).
     */
    async checkBatchStart(): Promise<BatchStartCheck> {
      if (await deps.unsealedStart?.()) return UNSEALED_BATCH_START;
      return deps.noLocalActivities?.() ? { noLocalActivities: true } : undefined;
    },
    /**
     * Activity `workerHome` (on the run's task queue): the home queue of the worker that runs it. A run whose home
     * worker is gone asks for a new home with it (worker affinity, README).
     */
    async workerHome(): Promise<{ homeQueue?: string }> {
      const homeQueue = deps.homeQueue?.();
      return homeQueue ? { homeQueue } : {};
    },
    /**
     * Local activity `verifyApproval`: checks a decision's token (signature, expiry, audience, binding to the run, call,
     * digest and verb) and the worker's `authorizeApproval`; answers the verified identity or the refusal text. A local
     * activity so that its input, the token, is not written to history (only its result is, in a marker).
     */
    async verifyApproval(input: VerifyApprovalInput): Promise<VerifyApprovalResult> {
      if (!deps.approvals)
        return { ok: false, refusal: `Cannot ${input.decision} tool call ${input.toolCallId}: ${NOT_VERIFYING}` };
      return deps.approvals.verifyApproval(input);
    },
    /** Local activity `checkSubAgentOutput`: a typed sub-agent's final text parsed and validated (README "Sub-agents"). */
    checkSubAgentOutput,
    /** Local activity `checkRunOutput`: a run's final answer parsed and validated against its `output` (docs/runs.md "Typed results"). */
    checkRunOutput,
    /**
     * Local activity `checkTreeMember`: whether the run a `keelTreeApprovals` report names belongs to the desk's tree
     * (its memo names the desk; activities/agents/check-tree-member.ts).
     */
    checkTreeMember: createCheckTreeMember(clientFor(deps, 'checkTreeMember')),
    /** Activity `awaitSubAgentRun`: a sub-agent call attaches to the run already holding its child id. */
    awaitSubAgentRun: createAwaitSubAgentRun(clientFor(deps, 'awaitSubAgentRun')),
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
    /**
     * Activity `gradeBatchTask`: a graded batch judges a finished child run with the task's grader (README "Graded
     * batches"); a grader that throws gives `{ error }`, recorded as a grading error.
     */
    gradeBatchTask: createGradeBatchTask({
      graders: deps.graders,
      client: clientFor(deps, 'gradeBatchTask'),
    }),
  };
}

export type KeelActivities = ReturnType<typeof createActivities>;
