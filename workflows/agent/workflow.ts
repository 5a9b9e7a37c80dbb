/**
 * `agentWorkflow`: one agent session. Checks the input, answers signals and queries, runs Pi's loop per agent run,
 * waits for follow-ups in session mode, continues-as-new when history grows, and returns the result.
 */
import {
  allHandlersFinished,
  ApplicationFailure,
  CancellationScope,
  condition,
  makeContinueAsNewFunc,
  isCancellation,
  setWorkflowOptions,
  TemporalFailure,
  workflowInfo,
} from '@temporalio/workflow';
import {
  cannotContinueFrom,
  CANNOT_CONTINUE_EMPTY,
  ErrorType,
  thrownMessage,
  UNEXPECTED_SECOND_ARGUMENT,
  workflowBug,
} from '../../common/errors.js';
import { emptyUsage, lastAssistant, messageText, type Message } from '../../common/messages.js';
import { prefixDigests } from '../../common/transcript-digest.js';
import type { AgentRunInput, AgentRunResult, RunStatus } from '../../common/run.js';
import { localSetupActivities, setupActivities } from '../activities.js';
import { PATCH } from '../patches.js';
import { publishFailedEnd } from './visibility.js';
import { runFeatures } from './features.js';
import { relayClose } from './stream-relay.js';
import type { RelayedClose } from '../../common/stream-relay.js';
import { textChars, unboundedPayloads } from './continue-as-new.js';
import { toUserMessages } from './incoming.js';
import { hasQueued, nextStart } from './queues.js';
import { AgentSession } from './session.js';
import type { LoopPosition, SessionState } from './state.js';
import type { StartRunResult } from '../../common/wire.js';
import { nestedTooDeep, tooDeep } from '../../common/nesting.js';
import { runAgentLoop, type RunStart } from './turn-loop.js';
import { forkedSessionWaits } from './fork-start.js';
import { batchMemo } from '../batch-protocol.js';
import { registerBatchReportHandler, reportToBatch } from './report-to-batch.js';
import { registerQueries } from './queries.js';
import { registerVerbs } from './verbs.js';
import { registerApprovalDesk } from '../tree/approvals.js';
import { treeMemo } from '../tree/sub-agent.js';
import { registerProviderWait } from '../limits/run-wait.js';
import { registerTreeBudget } from '../tree/budget.js';
import { askImpliedPatches, since } from '../since.js';

/** A result payload must stay well under Temporal's 2 MB limit; larger transcripts are read with the `messages` query. */
const MAX_RESULT_CHARS = 1_500_000;

export async function agentWorkflow(input: AgentRunInput, carried?: SessionState): Promise<AgentRunResult> {
  const opened: { session?: AgentSession } = {};
  let r: AgentRunResult;
  // the stream relay's close (no command): a reader holding every event up to it ends without asking Temporal
  const close = (ended: RelayedClose['ended']) =>
    relayClose(ended, opened.session?.events.seq ?? carried?.eventSeq ?? 0);
  try {
    r = await session(input, carried, opened);
  } catch (err) {
    const failure = asRunFailure(err);
    if (!isContinueAsNew(err)) {
      if (!isCancellation(failure)) publishFailedEnd(runFeatures().leanStart); // the memo: no command
      // a child of a batch tells it how it closed (not when it continues-as-new: the next run will)
      await reportToBatch(undefined, err, opened.session?.state);
    }
    close(isContinueAsNew(err) ? 'continuedAsNew' : isCancellation(failure) ? 'cancelled' : 'failed');
    throw failure;
  }
  await reportToBatch(r, undefined, opened.session?.state);
  close('completed');
  return r;
}

// Any error escaping the workflow fails the run (with the message) instead of retrying its workflow task forever.
// (Versioned workers pin runs to their build: `defaultVersioningBehavior` in worker/create-worker.ts.)
setWorkflowOptions({ failureExceptionTypes: [Error] }, agentWorkflow);

async function session(
  input: AgentRunInput,
  carried: SessionState | undefined,
  opened: { session?: AgentSession },
): Promise<AgentRunResult> {
  refuseForeignState(carried);
  const s = new AgentSession(carried ?? initialState(input));
  // 0.13.0: one marker for every earlier patch, first (a child started lean asks it only where it asks a patch)
  if (!s.features.leanStart) askImpliedPatches();
  opened.session = s;
  let temporalCancelled = false;
  CancellationScope.current().cancelRequested.catch(() => {
    temporalCancelled = true;
    s.cancelReason ??= 'workflow cancelled';
    s.abortWith('cancel');
  });
  registerVerbs(s);
  registerQueries(s);
  registerBatchReportHandler(s.state);
  registerApprovalDesk(s.state, () => s.publishDetails(), 'state().pendingApprovals');
  registerTreeBudget(() => s.budget.ledger());
  registerProviderWait(s); // no command (workflows/limits/run-wait.ts)
  const st = s.state;

  let start: RunStart | undefined = carried?.position ? { resume: carried.position } : undefined;
  if (!carried) {
    s.publishDetails();
    start = await firstRun(s, input); // validates before anything reads the transcript
  }
  if (!carried && !start) start = hasQueued(st) ? nextStart(st) : undefined; // a session created by its first message
  s.digests = prefixDigests(st.transcript);

  for (;;) {
    if (start) {
      st.status = 'running';
      st.position = undefined;
      s.publish();
      const end = await runAgentLoop(s, start);
      start = undefined;
      if (end.kind === 'continueAsNew') return continueWith(s, input, end.position);
      if (s.cancelRequested) return cancelled(s, temporalCancelled);
      const interrupted = s.abort === 'interrupt';
      s.abort = undefined;
      if (end.reason === 'historyFull' || end.reason === 'budget') return closeRun(s, 'stopped');
      if (end.reason === 'invalidOutput') return closeRun(s, 'failed', ErrorType.InvalidAgentOutput);
      st.lastError = end.reason === 'error' ? lastAssistant(st.transcript, st.newFrom)?.errorMessage : undefined;
      st.lastRunFailed = end.reason === 'error';
      const ranToStop = (end.reason === 'stop' || end.reason === 'terminate') && !interrupted;
      if (ranToStop && hasQueued(st)) {
        start = nextStart(st); // a message arrived as the run ended: nothing is lost
        continue;
      }
      // a task ends here; messages still queued (after maxTurns, an error or an interrupt) are returned unprocessed
      if ((st.config.mode ?? 'task') === 'task')
        return closeRun(
          s,
          end.reason === 'error' ? 'failed' : ranToStop && end.reason === 'stop' ? 'completed' : 'stopped',
        );
    }
    // the session is idle
    if (s.cancelRequested) return cancelled(s, temporalCancelled);
    if (workflowInfo().targetWorkerDeploymentVersionChanged && since(PATCH.upgradeOnIdle))
      return continueWith(s, input, undefined, true);
    if (hasQueued(st) && since(PATCH.answerQueued)) {
      s.abort = undefined;
      start = nextStart(st); // a waiting session with queued messages answers them
      continue;
    }
    if (s.endRequested) return closeRun(s, endStatus(st.lastRunFailed));
    st.status = st.lastRunFailed ? 'failed' : 'waiting';
    s.publish();
    const seen = st.received;
    let arrived = false;
    try {
      // a deploy wakes it too (refreshed by any workflow task; 0.1.0 ran unversioned, where this is always false)
      arrived = await condition(
        () =>
          st.received > seen ||
          s.cancelRequested ||
          s.endRequested ||
          workflowInfo().targetWorkerDeploymentVersionChanged,
        st.config.idleTimeout ?? '1h',
      );
    } catch (err) {
      if (!temporalCancelled) throw err;
    }
    if (s.cancelRequested) return cancelled(s, temporalCancelled);
    if (since(PATCH.answerQueued)) {
      if (!arrived) return closeRun(s, endStatus(st.lastRunFailed)); // idle timeout
      continue; // queued messages are answered first, then `end` finishes
    }
    if (!arrived || s.endRequested) return closeRun(s, 'completed');
    s.abort = undefined;
    start = nextStart(st);
  }
}

/** The state is Keel's own, carried by continue-as-new: a first run given one (a raw start) is refused. */
function refuseForeignState(carried: unknown): void {
  const raw = carried !== undefined && workflowInfo().continuedFromExecutionRunId === undefined;
  if (carried !== undefined && (!isSessionState(carried) || (raw && since(PATCH.carriedStateOnlyByContinue)))) {
    throw ApplicationFailure.create({
      type: ErrorType.InvalidAgentInput,
      message: UNEXPECTED_SECOND_ARGUMENT,
      nonRetryable: true,
      details: [[UNEXPECTED_SECOND_ARGUMENT]],
    });
  }
}

/** The carried state of a continue-as-new, as far as the workflow relies on its shape. */
function isSessionState(c: unknown): c is SessionState {
  if (!c || typeof c !== 'object' || Array.isArray(c)) return false;
  const v = c as Record<string, unknown>;
  return (
    !!v.config &&
    typeof v.config === 'object' &&
    Array.isArray(v.transcript) &&
    Array.isArray(v.steering) &&
    Array.isArray(v.followUps) &&
    Array.isArray(v.tools) &&
    !!v.usage &&
    typeof v.usage === 'object' &&
    typeof v.turns === 'number' &&
    typeof v.newFrom === 'number'
  );
}

/** Temporal's own failures, cancellation and continue-as-new pass through; anything else is a bug in this code. */
function asRunFailure(err: unknown): unknown {
  if (err instanceof TemporalFailure || isCancellation(err) || isContinueAsNew(err)) return err;
  return ApplicationFailure.create({
    type: ErrorType.WorkflowBug,
    message: workflowBug(thrownMessage(err)),
    nonRetryable: true,
  });
}

function isContinueAsNew(err: unknown): boolean {
  return err instanceof Error && err.name === 'ContinueAsNew';
}

/** How an idle session ends (`end`, idle timeout): Failed when its last agent run ended in a model error. */
function endStatus(lastRunFailed: boolean | undefined): RunStatus {
  return lastRunFailed && since(PATCH.sessionFailed) ? 'failed' : 'completed';
}

function initialState(input: AgentRunInput): SessionState {
  const { prompt: _prompt, messages, ...config } = input ?? ({} as AgentRunInput);
  const transcript = Array.isArray(messages) ? [...messages] : [];
  return {
    config,
    transcript,
    newFrom: transcript.length,
    steering: [],
    followUps: [],
    tools: [],
    usage: emptyUsage(),
    turns: 0,
    runs: 0,
    status: 'starting',
    continuedAsNew: 0,
    eventSeq: 0,
    received: 0,
  };
}

/**
 * Validates the input (an activity: ajv and the worker's tool and model registries; a local activity in a sub-agent
 * started lean, 0.12.0) before any model call. Undefined: a session with neither prompt nor messages, which waits for
 * its first message (update-with-start, README).
 */
async function firstRun(s: AgentSession, input: AgentRunInput): Promise<RunStart | undefined> {
  const st = s.state;
  // an input nested thousands deep (a raw start) could not even be sent to the check: refused here, no activity
  const deep = tooDeep(input);
  const check =
    deep !== undefined && since(PATCH.deepInputRefused)
      ? { errors: [nestedTooDeep(deep)], tools: [], searchAttributes: false }
      : await (s.features.leanStart ? localSetupActivities : setupActivities).startRun.executeWithOptions(
          { summary: 'check run input' },
          [{ input }],
        );
  const errors = [...check.errors];
  const prompts = errors.length === 0 && input.prompt !== undefined ? toUserMessages(input.prompt) : [];
  if (errors.length === 0 && prompts.length === 0 && awaitsFirstMessage(st.transcript, input)) {
    adoptWorkerFacts(st, check);
    return undefined;
  }
  if (errors.length === 0 && prompts.length === 0) {
    const last = st.transcript[st.transcript.length - 1];
    if (!last) errors.push(`prompt: ${CANNOT_CONTINUE_EMPTY}; give a prompt or messages`);
    else if (last.role === 'assistant') errors.push(`prompt: ${cannotContinueFrom('assistant')}; give a prompt`);
  }
  if (errors.length > 0) {
    st.status = 'failed';
    st.lastError = `Invalid AgentRunInput: ${errors.join('; ')}`;
    throw ApplicationFailure.create({
      type: ErrorType.InvalidAgentInput,
      message: st.lastError,
      nonRetryable: true,
      details: [errors],
    });
  }
  adoptWorkerFacts(st, check);
  if (check.contextWindow) st.contextWindow = check.contextWindow;
  if (check.largePayloads) st.largePayloads = true;
  return prompts.length > 0 ? { prompts } : { continue: true };
}

/** What `startRun` said of its worker, kept in the run's state (a session waiting for its first message too). */
function adoptWorkerFacts(st: SessionState, check: StartRunResult): void {
  st.tools = check.tools;
  st.searchAttributes = check.searchAttributes;
  if (check.homeQueue) st.homeQueue = check.homeQueue;
  if (check.verifiedApprovals) st.verifiedApprovals = true;
  if (check.otherTools) st.otherTools = check.otherTools;
  if (check.toolsOnRunQueue) st.toolsOnRunQueue = true;
  if (check.noLocalActivities) st.noLocalActivities = true;
}

function result(s: AgentSession, status: RunStatus): AgentRunResult {
  const st = s.state;
  const newMessages = st.transcript.slice(st.newFrom);
  const last = lastAssistant(st.transcript, st.newFrom);
  const base: AgentRunResult = {
    status,
    finalText: last ? messageText(last) : '',
    newMessages,
    newMessagesFrom: st.newFrom,
    usage: st.usage,
    turns: st.turns,
    ...(st.modelCalls !== undefined ? { modelCalls: st.modelCalls } : {}),
    ...(st.lastError ? { error: st.lastError } : {}),
    ...(hasQueued(st) ? { unprocessed: [...st.steering, ...st.followUps] } : {}),
    ...(status === 'completed' && st.typedOutput ? { output: st.typedOutput.value } : {}),
  };
  // a result whose text alone passes the cap is not serialised to measure it
  const fits = textChars(newMessages) <= MAX_RESULT_CHARS && JSON.stringify(base).length <= MAX_RESULT_CHARS;
  if (fits || unboundedPayloads(st.largePayloads)) return base;
  return { ...base, newMessages: [], newMessagesOmitted: { count: newMessages.length, fromIndex: st.newFrom } };
}

/**
 * Closes the workflow with its final status. A run whose last assistant message is an error ends Failed
 * (`AgentRunFailed`, result in details); `failureType` names another failure (`InvalidAgentOutput`, typed-output.ts).
 */
async function closeRun(
  s: AgentSession,
  status: RunStatus,
  failureType: string = ErrorType.AgentRunFailed,
): Promise<AgentRunResult> {
  s.state.status = status;
  s.closed = true;
  s.publish();
  await beforeClose();
  const r = result(s, status);
  if (status === 'failed') {
    throw ApplicationFailure.create({
      type: failureType,
      message: r.error ?? 'agent run failed',
      nonRetryable: true,
      details: [r],
    });
  }
  return r;
}

/**
 * Ends the workflow as Canceled. After a `cancel` signal an activity asks Temporal to cancel this execution (a workflow
 * may not request its own cancellation), so the run closes exactly as after a client's cancellation request.
 */
async function cancelled(s: AgentSession, temporalCancelled: boolean): Promise<never> {
  s.state.status = 'cancelled';
  s.closed = true;
  s.publish();
  await beforeClose();
  if (!temporalCancelled) {
    const info = workflowInfo();
    const target = { workflowId: info.workflowId, runId: info.runId };
    const summary = `cancel: ${s.cancelReason ?? 'cancelled'}`;
    // a local activity: its result is a marker of this task, so no activity completion can race the cancellation
    if (since(PATCH.cancelFromLocalActivity))
      await localSetupActivities.requestCancel.executeWithOptions({ summary }, [target]);
    else await setupActivities.requestCancel.executeWithOptions({ summary }, [target]);
  }
  await condition(() => false);
  throw new Error('unreachable: the cancellation request ends the workflow');
}

/**
 * Continues as new, carrying the session. `upgrade`: the new run starts on the deployment's current version (an idle
 * session after a deploy) instead of staying pinned to this run's build.
 */
async function continueWith(
  s: AgentSession,
  input: AgentRunInput,
  position: LoopPosition | undefined,
  upgrade = false,
): Promise<never> {
  const st = s.state;
  st.position = position;
  st.eventSeq = s.events.seq;
  st.continuedAsNew += 1;
  // onto a new build: its workers have their own home queues (the next worker-local call asks for one)
  if (upgrade && st.homeQueue !== undefined) st.homeQueue = undefined;
  await s.beforeContinueAsNew();
  // a batch's child stays its child (workflows/agent/report-to-batch.ts), a sub-agent in its tree (sub-agent.ts)
  const memo = { ...batchMemo().memo, ...treeMemo() };
  const options = {
    ...(Object.keys(memo).length > 0 ? { memo } : {}),
    ...(upgrade ? { initialVersioningBehavior: 'AUTO_UPGRADE' as const } : {}),
  };
  return makeContinueAsNewFunc<(i: AgentRunInput, c?: SessionState) => Promise<AgentRunResult>>(options)(
    { model: input.model },
    st,
  );
}

/**
 * Before the workflow completes, fails or is cancelled: lets running Update handlers answer (an `end` waiting for the
 * final status answers now). No command: with no handler running (every 0.1.0 history) the condition holds at once.
 */
async function beforeClose(): Promise<void> {
  // the common case, no handler running, creates no scope and no condition: 8 promises per run (bench/replay-cost.ts)
  if (!allHandlersFinished()) await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
}

/**
 * A session started with neither `prompt` nor `messages` waits for its first message instead of failing (so a service
 * can create a conversation with update-with-start: its `followUp` is the first message). Behind
 * `since(PATCH.sessionAwaitsFirstMessage)`: 0.1.0 failed such a run with `InvalidAgentInput`.
 */
function awaitsFirstMessage(transcript: readonly Message[], input: AgentRunInput): boolean {
  const empty = input.prompt === undefined && transcript.length === 0 && (input.mode ?? 'task') === 'session';
  return (empty && since(PATCH.sessionAwaitsFirstMessage)) || forkedSessionWaits(transcript, input);
}
