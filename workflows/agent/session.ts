/**
 * The agent session: `SessionState` (plain JSON, carried across continue-as-new) and `AgentSession`, the class that holds
 * it with what lives only in this run (event log, cancellation scopes, abort, running tools, published attributes) and
 * offers what the loop and the handlers do with it: append, emit, publish, run an activity cancellably, wait for an
 * approval, and one method per verb (each called by the signal and by the Update of the same name, verbs.ts).
 * In the style of Temporal's `safe-message-handlers` sample: state and behaviour in a class, one-line handlers.
 */
import {
  CancellationScope,
  condition,
  allHandlersFinished,
  setCurrentDetails,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgentEvent } from '../../common/events.js';
import { relayEvent } from './stream-relay.js';
import type {
  AssistantMessage,
  Message,
  ToolCall,
  ToolResultMessage,
  Usage,
  UserMessage,
} from '../../common/messages.js';
import { toolCallsOf } from '../../common/messages.js';
import type { ReplayRef } from '../../common/replay.js';
import { nextDigest } from '../../common/transcript-digest.js';
import type { AgentRunInput, IncomingMessage, SessionStatus } from '../../common/run.js';
import type { RunRef, ToolInfo, ToolOutcome } from '../../common/wire.js';
import type {
  ApprovalDecisionInput,
  ApprovalRecord,
  ApprovalVerdict,
  ClosedAck,
  InterruptAck,
  PendingApproval,
  QueuedAck,
  UpdateName,
} from '../../common/updates.js';
import { runClosed } from '../../common/updates.js';
import { PATCH } from '../patches.js';
import { ApprovalDesk, publicRecord, type ApprovalWait } from './approvals.js';
import { localSetupActivities } from '../activities.js';
import { RunHome } from './tool-placement.js';
import type { ToolBatchHost } from './tool-batch.js';
import { historyDecision, type HistoryDecision } from './continue-as-new.js';
import { renderDetails } from './details.js';
import { EventLog } from './event-log.js';
import { toUserMessages } from './incoming.js';
import { enqueue } from './queues.js';
import { closedWhy, isFinal, reject } from './update-guards.js';
import { publishAttributes, turnEndUpsertDue, type Published } from './visibility.js';
import { RunBudget } from './budget.js';
import { RunTree } from '../tree/context.js';
import { runFeatures, type RunFeatures } from './features.js';
import type { AbortKind, RunConfig, RunningTool, SessionState, StoredPendingApproval } from './state.js';
import { priorityField } from '../limits/run-wait.js';
import type { Priority } from '../../common/limits/definition.js';
import { since } from '../since.js';

/**
 * One agent session in this run of `agentWorkflow`: the carried `state` and the live parts around it. The loop
 * (turn-loop.ts), the model step, the tool batch and the handlers (verbs.ts, queries.ts) all work through it.
 */
export class AgentSession implements ToolBatchHost {
  readonly run: RunRef;
  readonly events: EventLog;
  /** `digests[i]`: digest of transcript[0, i), sent with activity inputs (see common/transcript-digest.ts). */
  digests: number[] = [];
  abort?: AbortKind;
  /** A turn is in progress (between its turn_start and turn_end): it is turn `state.turns + 1`. */
  turnOpen = false;
  /** Search attribute values last upserted. */
  published?: Published;
  /** The workflow is closing with its final status (set by `closeRun` / `cancelled`); Updates are refused from then on. */
  closed = false;
  /** `end` received (or carried across continue-as-new): complete once idle. */
  endRequested: boolean;
  /** Continue-as-new is under way: waiting Update handlers answer now. */
  continuing = false;
  cancelReason?: string;
  /**
   * The workflow's root scope: `consideredCancelled` as soon as Temporal cancellation is requested (within the job that
   * brings it), while `abort` follows only once the workflow's promises run; validators check both (update-guards.ts).
   */
  readonly workflowScope: CancellationScope;
  /**
   * The one cancellation scope the run's activities are scheduled in (`runCancellable`): an abort cancels it, so the
   * AbortSignals of the activities running then fire; a later activity of the aborted run is cancelled at once. The
   * next run after the abort gets a new scope.
   */
  activityScope?: CancellationScope;
  /** Tool calls whose activity is running, by id. */
  readonly runningTools = new Map<string, RunningTool>();
  /** History size below which continue-as-new is not tried again (after the carried state was too large to carry). */
  continueAsNewRetryAt = 0;
  /** Workflow time the running model call started, if one is running. */
  modelCallSince?: number;
  /** What the running model call waits for under provider limits (workflows/limits/run-wait.ts), if it waits. */
  providerWait?: string;
  /** History size when this run's first workflow task started (the carried state included). */
  readonly historyAtStart: number;
  /** Where worker-local tool calls run (tool-placement.ts): the home queue is carried state, a move under way is not. */
  readonly home: RunHome;
  /** The run's budget (budget.ts): it owns the usage, model calls and ledger in the state. */
  readonly budget: RunBudget;
  /** The run's approvals (approvals.ts): it owns the pending calls and decided records in the state. */
  readonly desk: ApprovalDesk;
  /** What this run uses (features.ts), decided once at its start: the hot path skips the rest. */
  readonly features: RunFeatures;
  /** This run's place in a sub-agent tree (workflows/tree/context.ts): budget reference, root desk, sub-agent calls. */
  readonly tree: RunTree;

  /** Call in the workflow's root scope, at its start: the run's identity and history size are read here. */
  constructor(readonly state: SessionState) {
    const info = workflowInfo();
    this.run = { workflowId: info.workflowId, runKey: info.firstExecutionRunId };
    // eventSeq: absent in a malformed carried state
    this.events = new EventLog(state.eventSeq ?? 0, undefined, (e) => relayEvent(e, state.transcript));
    this.historyAtStart = info.historySize;
    this.workflowScope = CancellationScope.current();
    this.endRequested = state.endRequested === true;
    this.home = new RunHome(state);
    this.features = runFeatures();
    this.tree = new RunTree(state, this.features);
    this.budget = new RunBudget(state, this.emit, this.tree);
    this.desk = new ApprovalDesk(state, this.tree);
  }

  /** The run's configuration (the tool batch reads it through `ToolBatchHost`). */
  get config(): RunConfig {
    return this.state.config;
  }

  /** The tools the worker reported at the start (`startRun`). */
  get tools(): ToolInfo[] {
    return this.state.tools;
  }

  /** The worker's tools this run did not enable (`startRun`, from 0.6.3). */
  get otherTools(): string[] | undefined {
    return this.state.otherTools;
  }

  /** The call of message `assistantIndex` awaits approval here (a batch resumed after continue-as-new). */
  isPending(toolCallId: string, assistantIndex: number): StoredPendingApproval | undefined {
    return this.desk.findPending(toolCallId, assistantIndex);
  }

  // --- the transcript, events and what the Temporal UI shows ---------------------------------------------------------

  /** Appends a message to the transcript: message_start, append, message_end. Returns its index. */
  append(message: Message): number {
    this.events.emit({ type: 'message_start', message });
    this.state.transcript.push(message);
    this.digests.push(nextDigest(this.digests[this.digests.length - 1], message));
    this.events.emit({ type: 'message_end', message });
    return this.state.transcript.length - 1;
  }

  /** Logs an agent event (the `events` query). A bound function: it is handed on as Pi's `emit`. */
  readonly emit = (event: AgentEvent): void => this.events.emit(event);

  /** The current details (Markdown) of this session, as the Temporal UI shows them. */
  details(): string {
    const turn = this.turnOpen ? this.state.turns + 1 : this.state.turns;
    return renderDetails(this.state, {
      turn,
      modelCallSince: this.modelCallSince,
      ...(this.providerWait ? { providerWait: this.providerWait } : {}),
      runningTools: this.runningTools,
      budget: this.budget.details(),
    });
  }

  /** Republishes only the current details (not a command): when a model call or a tool starts or ends. */
  publishDetails(): void {
    setCurrentDetails(this.details());
  }

  /** At every status change: the details, and the search attributes that changed (each upsert is a history event). */
  publish(): void {
    setCurrentDetails(this.details());
    this.published = publishAttributes(this.state, this.published, this.features.leanStart);
    this.desk.reportToRoot(); // a sub-agent whose pending approvals changed tells its root
  }

  /** At every turn end: the details, and the search attributes every `TURN_UPSERT_STRIDE` turns (visibility.ts). */
  publishTurnEnd(): void {
    if (turnEndUpsertDue(this.state, this.published, this.features.leanStart)) this.publish();
    else this.publishDetails();
  }

  /** The `priority` field of this run's model activities (workflows/limits/run-wait.ts). */
  providerPriority(): { priority?: Priority } {
    return priorityField(this.state.config.priority, this.features.batch !== undefined);
  }

  /** A model call started at `since` (workflow time) or, undefined, ended: the details say so. */
  modelCalling(since: number | undefined): void {
    this.modelCallSince = since;
    if (since === undefined) this.providerWait = undefined;
    this.publishDetails();
  }

  /**
   * A replaying run (input `replay`, common/replay.ts): its spec, the open turn and each call's position among its
   * message's tool calls, for the tool activities to serve the calls from the record. Undefined for any other run.
   */
  replayAt(assistantIndex: number, calls: readonly ToolCall[]): ReplayRef | undefined {
    const spec = this.state.config.replay;
    if (!spec) return undefined;
    const message = this.state.transcript[assistantIndex];
    const all = message?.role === 'assistant' ? toolCallsOf(message) : [];
    const at = calls.map((c) => {
      const same = all.indexOf(c);
      return same !== -1 ? same : all.findIndex((x) => x.id === c.id);
    });
    return { ...spec, turn: this.state.turns + 1, at };
  }

  /** turn_start with the turn's number in the conversation (the completed turns + 1); the details say it. */
  openTurn(): void {
    this.emit({ type: 'turn_start', turn: this.state.turns + 1 });
    this.turnOpen = true;
    this.publishDetails();
  }

  /** turn_end; the turn counts as completed. */
  closeTurn(message: AssistantMessage, toolResults: ToolResultMessage[]): void {
    this.emit({ type: 'turn_end', message, toolResults });
    this.turnOpen = false;
    this.state.turns += 1;
    this.publishTurnEnd();
  }

  // --- aborts and activities ------------------------------------------------------------------------------------------

  /** An agent run is in progress (it may be waiting for an approval). */
  get running(): boolean {
    return this.state.status === 'running' || this.state.status === 'awaiting-approval';
  }

  /** A `cancel` (signal, Update or Temporal cancellation) was applied. */
  get cancelRequested(): boolean {
    return this.abort === 'cancel';
  }

  /**
   * The run is being cancelled: by the `cancel` signal or Update, or by Temporal cancellation, which is seen here within
   * the workflow task that brings it (the root scope is marked at once; `abort` is set only when the promises run).
   */
  get cancelling(): boolean {
    return this.abort === 'cancel' || this.workflowScope.consideredCancelled;
  }

  /** Aborts the agent run: the activities running now are cancelled, later ones at once (`runCancellable`). */
  abortWith(kind: AbortKind): void {
    if (this.abort !== 'cancel') this.abort = kind;
    this.activityScope?.cancel();
  }

  /**
   * Runs `fn` (which schedules an activity) in the session's activity scope, so that `interrupt`/`cancel` reach the
   * activity inside; after an abort the activity is cancelled before it is scheduled (no command). One scope serves
   * every call until an abort (a scope per call cost five promises), and the scheduling is synchronous, as before.
   */
  runCancellable<T>(fn: () => Promise<T>): Promise<T> {
    let scope = this.activityScope;
    if (!scope || (scope.consideredCancelled && !this.abort))
      scope = this.activityScope = new ActivityScope({ cancellable: true });
    if (this.abort) scope.cancel();
    return scope.run(fn);
  }

  /** At a turn boundary: continue-as-new now, go on, or stop (continue-as-new.ts). */
  checkHistory(): HistoryDecision {
    const { retryAt, ...decision } = historyDecision(this.state, this.historyAtStart, this.continueAsNewRetryAt);
    if (retryAt !== undefined) this.continueAsNewRetryAt = retryAt;
    return decision;
  }

  /**
   * Waits for the decision on `call` (of the assistant message at `assistantIndex`), registering it as pending unless it
   * already is (a batch resumed after continue-as-new). See approvals.ts.
   */
  awaitApproval(call: ToolCall, assistantIndex: number, args: unknown, argsDigest: string): Promise<ApprovalWait> {
    return this.desk.awaitDecision(this, call, assistantIndex, args, argsDigest);
  }

  /** Continue-as-new may suspend a waiting approval: due only when nothing else of the batch is running. */
  suspendDue(): boolean {
    return this.runningTools.size === 0 && this.checkHistory().kind === 'continueAsNew';
  }

  // --- the verbs: each called by its signal and by its Update (verbs.ts) ---------------------------------------------

  /** Refuses `update` with `Cannot <action>: the run <why>` when the run takes no more requests of that kind. */
  refuseIfClosed(update: UpdateName): void {
    const why = closedWhy(this, update);
    if (why) reject(runClosed(update, why));
  }

  /** Queues a message for when the agent would stop; a waiting session starts a run on it. */
  followUp(m: IncomingMessage | IncomingMessage[]): QueuedAck {
    return this.queue('followUp', m);
  }

  /** Queues a message injected after the current tool batch, before the next model call. */
  steer(m: IncomingMessage | IncomingMessage[]): QueuedAck {
    return this.queue('steering', m);
  }

  private queue(queue: 'followUp' | 'steering', m: IncomingMessage | IncomingMessage[]): QueuedAck {
    enqueue(this.state, queue, toUserMessages(m, queue === 'followUp' ? 'followUp' : 'steer'));
    this.publishDetails(); // the Web UI's queued line
    return { queued: { steering: this.state.steering.length, followUp: this.state.followUps.length } };
  }

  /** Aborts the current agent run at the next boundary; answers whether one was running and what happens next. */
  interrupt(): InterruptAck {
    const interrupted = this.running;
    if (!interrupted) return { interrupted };
    this.abortWith('interrupt');
    return { interrupted, next: this.afterInterrupt() };
  }

  /** What an interrupted run does next (workflow.ts, after its agent run ends aborted). */
  private afterInterrupt(): NonNullable<InterruptAck['next']> {
    const st = this.state;
    if ((st.config.mode ?? 'task') === 'task') return 'stops';
    if (st.steering.length + st.followUps.length > 0) return 'answers-queued';
    return this.endRequested ? 'stops' : 'waits';
  }

  /** Finishes the session once idle. */
  end(): void {
    this.endRequested = true;
  }

  /** Aborts the agent run and ends the workflow as Canceled; the first reason given is kept (a malformed one reads `cancelled`). */
  cancel(reason?: unknown): void {
    if (this.abort !== 'cancel') this.cancelReason = typeof reason === 'string' && reason ? reason : 'cancelled';
    this.abortWith('cancel');
  }

  /** Lets a tool call awaiting approval run; answers the decision record. */
  approve(input: ApprovalDecisionInput): ApprovalRecord | Promise<ApprovalRecord> {
    return this.decide('approved', input);
  }

  /** Gives a tool call awaiting approval the denied result; answers the decision record. */
  deny(input: ApprovalDecisionInput): ApprovalRecord | Promise<ApprovalRecord> {
    return this.decide('denied', input);
  }

  private decide(decision: ApprovalVerdict, input: ApprovalDecisionInput): ApprovalRecord | Promise<ApprovalRecord> {
    if (!since(PATCH.decideAfterTaskJobs)) return this.decideNow(decision, input);
    if (this.state.verifiedApprovals && since(PATCH.verifiedApprovals)) return this.decideVerified(decision, input);
    // A cancel or interrupt that came in the same workflow task after this Update (the validator could not see it)
    // would abort the call once approved: the answer would be `approved` for a call that never runs. The decision
    // waits until every job of the task is applied (the handler's promise runs after them), then looks.
    return Promise.resolve().then(() => {
      this.refuseIfClosed(decision === 'approved' ? 'approve' : 'deny');
      return this.decideNow(decision, input);
    });
  }

  private decideNow(decision: ApprovalVerdict, input: ApprovalDecisionInput): ApprovalRecord {
    const record = this.desk.decidePending(decision, input);
    this.publish();
    return publicRecord(record);
  }

  /**
   * A signed decision (README "Who may approve"): once every job of the workflow task is applied (as `decide`), the
   * call is marked as having a decision under verification, the `verifyApproval` local activity checks the token (a
   * local activity: the token is not written to history) and the worker's policy, and only then is the decision
   * applied — if the call is still pending and the run still takes decisions. A refusal changes nothing: the call
   * stays pending, no record is kept, the Update answers the refusal text. Of two valid decisions the first verified
   * wins; the other is answered `already approved by …`.
   */
  private async decideVerified(decision: ApprovalVerdict, input: ApprovalDecisionInput): Promise<ApprovalRecord> {
    await Promise.resolve();
    const verb = decision === 'approved' ? 'approve' : 'deny';
    this.refuseIfClosed(verb);
    const pending = this.desk.pendingOrRefuse(input.toolCallId);
    pending.verifying = (pending.verifying ?? 0) + 1;
    let verdict;
    try {
      verdict = await CancellationScope.nonCancellable(() =>
        localSetupActivities.verifyApproval.executeWithOptions({ summary: `verify ${verb} ${pending.toolName}` }, [
          {
            run: this.run.workflowId,
            toolCallId: pending.toolCallId,
            argsDigest: pending.argsDigest,
            ...(pending.requestId !== undefined ? { requestId: pending.requestId } : {}),
            decision: verb,
            token: input.token ?? '',
            toolName: pending.toolName,
            args: pending.args,
            metadata: this.state.config.metadata ?? {},
          },
        ]),
      );
    } finally {
      pending.verifying -= 1;
      if (pending.verifying === 0) delete pending.verifying;
    }
    if (!verdict.ok) reject(verdict.refusal);
    this.refuseIfClosed(verb);
    const { subject, issuer, keyId } = verdict;
    const record = this.desk.decidePending(decision, input, {
      subject,
      ...(issuer !== undefined ? { issuer } : {}),
      ...(keyId !== undefined ? { keyId } : {}),
    });
    this.publish();
    return publicRecord(record);
  }

  /** A budget above this run's (a batch's) is spent: stop before the next model call with this text. */
  budgetStop(text: string): void {
    this.budget.stopWith(text);
  }

  /** Nothing: the signal's workflow task refreshes `workflowInfo()`, which an idle session re-checks (deploys). */
  wake(): void {}

  /** Waits until the run has its final status (or continues-as-new first): what `end` and `cancel` Updates answer. */
  async whenClosed(): Promise<ClosedAck> {
    await condition(() => (this.closed && isFinal(this.state.status)) || this.continuing);
    const status = this.state.status;
    return this.closed && isFinal(status) ? { status } : { status, continuedAsNew: true };
  }

  /** Before continue-as-new: carries an `end` request, and lets waiting handlers answer `{ continuedAsNew: true }`. */
  async beforeContinueAsNew(): Promise<void> {
    this.continuing = true;
    if (this.endRequested) this.state.endRequested = true;
    await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
  }
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
