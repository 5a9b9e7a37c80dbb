import { CancellationScope } from '@temporalio/workflow';
import type { BudgetKind } from '../../common/budget.js';
import type { Message, Usage, UserMessage } from '../../common/messages.js';
import { nextDigest } from '../../common/transcript-digest.js';
import type { AgentRunInput, SessionStatus } from '../../common/run.js';
import type { RunRef, ToolInfo, ToolOutcome } from '../../common/wire.js';
import type { ApprovalRecord, PendingApproval } from '../../common/updates.js';
import type { EventLog } from './event-log.js';

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
  config: Omit<AgentRunInput, 'prompt' | 'messages'>;
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
  /** Set by the `budgetStop` signal (a batch whose budget is spent): the text the run stops with. */
  budgetStop?: string;
}

export type AbortKind = 'interrupt' | 'cancel';

/** The live session: carried state plus what only exists in this run (scopes, event log). */
export interface Session {
  state: SessionState;
  run: RunRef;
  events: EventLog;
  abort?: AbortKind;
  /** Activity summaries of the current message's tool calls (from `callModel`). */
  toolSummaries?: Record<string, string>;
  /** A turn is in progress (between its turn_start and turn_end): it is turn `state.turns + 1`. */
  turnOpen?: boolean;
  /** Search attribute values last upserted. */
  published?: { status: string; model: string; turns: number; cost: number };
  /** The workflow is closing with its final status (set by `closeRun` / `cancelled`); Updates are refused from then on. */
  closed?: boolean;
  /** `end` signal received: complete once idle. */
  endRequested?: boolean;
  /** Continue-as-new is under way: waiting Update handlers answer now (workflows/agent/updates.ts). */
  continuing?: boolean;
  cancelReason?: string;
  /**
   * The workflow's root scope: `consideredCancelled` as soon as Temporal cancellation is requested (within the job that
   * brings it), while `abort` follows only once the workflow's promises run; validators check both (update-guards.ts).
   */
  workflowScope?: CancellationScope;
  /**
   * The one cancellation scope the run's activities are scheduled in (`runCancellable`): an abort cancels it, so the
   * AbortSignals of the activities running then fire; a later activity of the aborted run is cancelled at once. The
   * next run after the abort gets a new scope.
   */
  activityScope?: CancellationScope;
  /** Tool calls whose activity is running: id → tool name and start (workflow time, ms). */
  runningTools: Map<string, { toolName: string; since: number }>;
  /** History size below which continue-as-new is not tried again (after the carried state was too large to carry). */
  continueAsNewRetryAt: number;
  /** Workflow time the running model call started, if one is running. */
  modelCallSince?: number;
  /** History size when this run's first workflow task started (the carried state included). */
  historyAtStart: number;
  /** A move to a new home worker under way (concurrent calls that lost the home wait for the same one). */
  rehoming?: Promise<void>;
  /**
   * The home queue a local tool call was refused for (this workflow ran on another worker, docs/local-tools.md): later
   * worker-local calls of this execution go straight to the home queue while the home is the same.
   */
  notHome?: string;
  /** `digests[i]`: digest of transcript[0, i), sent with activity inputs (see common/transcript-digest.ts). */
  digests: number[];
}

/** Appends a message to the transcript: message_start, append, message_end. Returns its index. */
export function appendMessage(s: Session, message: Message): number {
  s.events.emit({ type: 'message_start', message });
  s.state.transcript.push(message);
  s.digests.push(nextDigest(s.digests[s.digests.length - 1], message));
  s.events.emit({ type: 'message_end', message });
  return s.state.transcript.length - 1;
}

/** An agent run is in progress (it may be waiting for an approval). */
export function agentRunning(s: Session): boolean {
  return s.state.status === 'running' || s.state.status === 'awaiting-approval';
}

export function abortSession(session: Session, kind: AbortKind): void {
  if (session.abort !== 'cancel') session.abort = kind;
  session.activityScope?.cancel();
}

/**
 * Runs `fn` (which schedules an activity) in the session's activity scope, so that `interrupt`/`cancel` reach the
 * activity inside; after an abort the activity is cancelled before it is scheduled (no command). One scope serves
 * every call until an abort (a scope per call cost five promises), and the scheduling is synchronous, as before.
 */
export function runCancellable<T>(session: Session, fn: () => Promise<T>): Promise<T> {
  let scope = session.activityScope;
  if (!scope || (scope.consideredCancelled && !session.abort))
    scope = session.activityScope = new ActivityScope({ cancellable: true });
  if (session.abort) scope.cancel();
  return scope.run(fn);
}

/**
 * The run's activity scope. `CancellationScope.run` makes the scope current and calls `runInContext`, an async method
 * that awaits `fn` (to cancel a scope `timeout`): two more promises per activity, each with a source-mapped stack trace
 * captured by the SDK's promise hook. This scope has no timeout, so `fn`'s own promise is returned: the same activity,
 * scheduled at the same moment in the same scope, two promises fewer.
 */
class ActivityScope extends CancellationScope {
  protected override runInContext<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return fn();
    } catch (err) {
      return Promise.reject(err as Error);
    }
  }
}
