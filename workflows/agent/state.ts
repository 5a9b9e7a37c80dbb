/**
 * The plain state an agent session carries across continue-as-new (`SessionState`, plain JSON) and the records in it:
 * where a run stands between two turns, a tool batch suspended while calls await approval, pending and decided
 * approvals. A leaf: it imports nothing of workflows/agent/, so every part of the session can name these types.
 */
import type { BudgetKind } from '../../common/budget.js';
import type { Message, Usage, UserMessage } from '../../common/messages.js';
import type { AgentRunInput, SessionStatus } from '../../common/run.js';
import type { TreeApprovalsState, TreeReported } from '../../common/tree/approvals.js';
import type { TreeLedgerState } from '../../common/tree/budget.js';
import type { ApprovalRecord, PendingApproval } from '../../common/updates.js';
import type { ToolInfo, ToolOutcome } from '../../common/wire.js';

/** Where an agent run stands between two turns; carried across continue-as-new so the run resumes there. */
export interface LoopPosition {
  /** Index in the transcript of this run's first new message (agent_end.messages = transcript.slice(runStart)). */
  runStart: number;
  turnsInRun: number;
  /** Messages polled from a queue and not yet injected. */
  pending: UserMessage[];
  /** The queue `pending` was drained from, so an abort can put it back. */
  pendingFrom: 'steering' | 'followUp';
  moreToolCalls: boolean;
  /** The last turn's tool batch terminated (all results asked to stop). */
  terminated?: boolean;
  /** Set when continue-as-new happened while a call of this turn's tool batch awaited approval. */
  batch?: SuspendedBatch;
}

/** A tool batch carried across continue-as-new while calls await approval (workflows/agent/approvals.ts). */
export interface SuspendedBatch {
  assistantIndex: number;
  /** Calls that finished before the suspension (their `tool_execution_end` was emitted), by id. */
  done: Record<string, ToolOutcome>;
}

/** A pending approval as the workflow keeps it: where the call is, and when it times out. */
export interface StoredPendingApproval extends PendingApproval {
  assistantIndex: number;
  /** Signed decisions on this call whose verification is under way (not in `state().pendingApprovals`). */
  verifying?: number;
  /** Workflow time (ms) at which the call gets the not-approved result. */
  expiresAt: number;
  /** The timeout as given (`24h`), for the result text. */
  timeout: string;
}

export interface StoredApprovalRecord extends ApprovalRecord {
  assistantIndex: number;
}

/** Everything `agentWorkflow` carries across continue-as-new. Plain JSON. */
export interface SessionState {
  config: RunConfig;
  /** A batch's child asked to report its outcome by signal as it closes (workflows/agent/report-to-batch.ts). */
  reportToBatch?: true;
  transcript: Message[];
  /** Index of this workflow's first new message (result.newMessages = transcript.slice(newFrom)). */
  newFrom: number;
  steering: UserMessage[];
  followUps: UserMessage[];
  tools: ToolInfo[];
  usage: Usage;
  turns: number;
  runs: number;
  status: SessionStatus;
  lastError?: string;
  /** The last agent run ended with a model error (a session then shows `failed` and ends Failed). */
  lastRunFailed?: boolean;
  continuedAsNew: number;
  eventSeq: number;
  /** Counts every message received by signal; a waiting session starts a run when it grows. */
  received: number;
  /** Set when continue-as-new happened inside an agent run. */
  position?: LoopPosition;
  /** The namespace has Keel's search attributes (checked once by `startRun`). */
  searchAttributes?: boolean;
  /** Tool calls awaiting approval (absent in state carried by 0.1.0). */
  pendingApprovals?: StoredPendingApproval[];
  /** Decided approvals, the latest 200. */
  approvals?: StoredApprovalRecord[];
  /**
   * The worker that started the run verifies approvals (from `startRun`; README "Who may approve"): every decision
   * carries a token the `verifyApproval` local activity must accept before it applies. Absent: free-text approvers.
   */
  verifiedApprovals?: true;
  /** The worker's tools this run did not enable (from `startRun`, 0.6.3): the text a call of one gets. */
  otherTools?: string[];
  /** An `end` was requested before continue-as-new: the new run completes once idle. */
  endRequested?: boolean;
  /** Model requests made (absent in state carried by 0.1.0). */
  modelCalls?: number;
  /** Budget limits whose 80 % warning was given. */
  budgetWarned?: BudgetKind[];
  /** The workers offload large payloads (from `startRun`): the carried state and the result have no size cap. */
  largePayloads?: boolean;
  /** The model's context window from its catalog (from `startRun`), for compaction. */
  contextWindow?: number;
  /** The task queue of the run's home worker (worker affinity): worker-local tools run there; `''`: no worker has one. */
  homeQueue?: string;
  /** The last move of the run to a new home worker (`homeWorkerLost` text), shown in the details. */
  rehomed?: string;
  /**
   * Tool activities go to the run's own task queue (`startRun` ran on a worker with role `all`, from 0.8.0); unset
   * again when a worker with role `model` refused one there (workflows/agent/tool-placement.ts).
   */
  toolsOnRunQueue?: boolean;
  /** The worker that ran `startRun` caches no workflow (0.12.0): the run starts its sub-agents not lean (no local activity). */
  noLocalActivities?: boolean;
  /** Set by the `budgetStop` signal (a batch whose budget is spent): the text the run stops with. */
  budgetStop?: string;
  /** A sub-agent: the pending calls it last reported to its tree's root (tree-approvals.ts). */
  treeReported?: TreeReported;
  /** A root: its sub-agents' calls awaiting approval and their decisions (tree-approvals.ts). */
  treeApprovals?: TreeApprovalsState;
  /** Where a run with `fallbackModels` stands (workflows/agent/fallback.ts); absent until its first switch. */
  fallback?: FallbackState;
  /** A root run's tree-budget ledger (common/tree/budget.ts), once a run of its tree reserved from it. */
  treeLedger?: TreeLedgerState;
  /** Typed results (workflows/agent/typed-output.ts): the last final answer valid against `config.output`, parsed. */
  typedOutput?: { value: unknown };
  /** Typed results: how many invalid final answers agent run number `run` (`runs`) sent back to the model. */
  outputRepairs?: { run: number; used: number };
}

/** A run's switches to its fallback models. Plain JSON, carried across continue-as-new. */
export interface FallbackState {
  /** Index in `[model, ...fallbackModels]` of the model that takes the run's requests. */
  index: number;
  /** Workflow time (ms) of the last switch: the run goes back to `model` a while after it. */
  since: number;
  switches: number;
  /** The last switch as the details show it. */
  last: string;
  /** Tokens and cost of each model's requests (every attempt), by `provider/model-id`. */
  usage: Record<string, { tokens: number; costUsd: number }>;
}

/** The run's configuration: its input without the prompt and messages (those start the transcript). */
export type RunConfig = Omit<AgentRunInput, 'prompt' | 'messages'>;

export type AbortKind = 'interrupt' | 'cancel';

/** A tool call whose activity is running: its tool and its start (workflow time, ms); by call id in `runningTools`. */
export interface RunningTool {
  toolName: string;
  since: number;
}
