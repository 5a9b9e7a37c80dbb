/**
 * `agentWorkflow`: one agent session. Checks the input, answers signals and queries, runs Pi's loop per agent run,
 * waits for follow-ups in session mode, continues-as-new when history grows, and returns the result.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  workflowInfo,
} from '@temporalio/workflow';
import { cannotContinueFrom, CANNOT_CONTINUE_EMPTY, ErrorType } from '../common/errors.js';
import { emptyUsage, messageText } from '../common/messages.js';
import { prefixDigests } from '../common/transcript-digest.js';
import { lastAssistant } from './details.js';
import type { AgentRunInput, AgentRunResult, RunStatus } from '../common/run.js';
import { setupActivities } from './activities.js';
import { publish } from './visibility.js';
import { unboundedPayloads } from './continue-as-new.js';
import { EventLog } from './event-log.js';
import { registerHandlers } from './handlers.js';
import { registerBudgetHandlers } from './budget.js';
import { toUserMessages } from './incoming.js';
import { drain } from './queues.js';
import { abortSession, type Session, type SessionState } from './session.js';
import { runAgentLoop, type RunStart } from './turn-loop.js';

/** A result payload must stay well under Temporal's 2 MB limit; larger transcripts are read with the `messages` query. */
const MAX_RESULT_CHARS = 1_500_000;

export async function agentWorkflow(input: AgentRunInput, carried?: SessionState): Promise<AgentRunResult> {
  const info = workflowInfo();
  const s: Session = {
    state: carried ?? initialState(input),
    run: { workflowId: info.workflowId, runKey: info.firstExecutionRunId },
    events: new EventLog(carried?.eventSeq ?? 0),
    inflight: new Set(),
    runningTools: new Map(),
    continueAsNewRetryAt: 0,
    digests: [],
  };
  s.digests = prefixDigests(s.state.transcript);
  let temporalCancelled = false;
  CancellationScope.current().cancelRequested.catch(() => {
    temporalCancelled = true;
    s.cancelReason ??= 'workflow cancelled';
    abortSession(s, 'cancel');
  });
  registerHandlers(s);
  registerBudgetHandlers(s);
  const st = s.state;

  let start: RunStart | undefined = carried?.position ? { resume: carried.position } : undefined;
  if (!carried) start = await firstRun(s, input);

  for (;;) {
    if (start) {
      st.status = 'running';
      st.position = undefined;
      publish(s);
      const end = await runAgentLoop(s, start);
      start = undefined;
      if (end.kind === 'continueAsNew') return continueWith(s, input, end.position);
      if (cancelRequested(s)) return cancelled(s, temporalCancelled);
      const interrupted = s.abort === 'interrupt';
      s.abort = undefined;
      if (end.reason === 'historyFull' || end.reason === 'budget') return finish(s, 'stopped');
      st.lastError = end.reason === 'error' ? lastAssistant(st.transcript, st.newFrom)?.errorMessage : undefined;
      const ranToStop = (end.reason === 'stop' || end.reason === 'terminate') && !interrupted;
      if (ranToStop && hasQueued(s)) {
        start = nextStart(s); // a message arrived as the run ended: nothing is lost
        continue;
      }
      // after maxTurns (Pi's shouldStopAfterTurn) or an interrupt the queues are left as they are
      if ((st.config.mode ?? 'task') === 'task') return finish(s, end.reason === 'error' ? 'failed' : ranToStop && end.reason === 'stop' ? 'completed' : 'stopped');
    }
    if (cancelRequested(s)) return cancelled(s, temporalCancelled);
    if (s.endRequested) return finish(s, 'completed');
    st.status = 'waiting';
    publish(s);
    const seen = st.received;
    let arrived = false;
    try {
      arrived = await condition(() => st.received > seen || cancelRequested(s) || s.endRequested === true, st.config.idleTimeout ?? '1h');
    } catch (err) {
      if (!temporalCancelled) throw err;
    }
    if (cancelRequested(s)) return cancelled(s, temporalCancelled);
    if (!arrived || s.endRequested) return finish(s, 'completed');
    s.abort = undefined;
    start = nextStart(s);
  }
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

/** Validates the input (an activity: ajv and the worker's tool and model registries) before any model call. */
async function firstRun(s: Session, input: AgentRunInput): Promise<RunStart> {
  publish(s);
  const check = await setupActivities.startRun.executeWithOptions({ summary: 'check run input' }, [{ input }]);
  const errors = [...check.errors];
  const prompts = errors.length === 0 && input.prompt !== undefined ? toUserMessages(input.prompt) : [];
  if (errors.length === 0 && prompts.length === 0) {
    const last = s.state.transcript[s.state.transcript.length - 1];
    if (!last) errors.push(`prompt: ${CANNOT_CONTINUE_EMPTY}; give a prompt or messages`);
    else if (last.role === 'assistant') errors.push(`prompt: ${cannotContinueFrom('assistant')}; give a prompt`);
  }
  if (errors.length > 0) {
    s.state.status = 'failed';
    s.state.lastError = `Invalid AgentRunInput: ${errors.join('; ')}`;
    throw ApplicationFailure.create({ type: ErrorType.InvalidAgentInput, message: s.state.lastError, nonRetryable: true, details: [errors] });
  }
  s.state.tools = check.tools;
  s.state.searchAttributes = check.searchAttributes;
  if (check.contextWindow) s.state.contextWindow = check.contextWindow;
  if (check.largePayloads) s.state.largePayloads = true;
  return prompts.length > 0 ? { prompts } : { continue: true };
}

/** Pi's `Agent.continue()` from an assistant tail: steering first (initial steering poll suppressed), else follow-ups. */
function nextStart(s: Session): RunStart {
  const { steering, followUps, config } = s.state;
  if (steering.length > 0) return { prompts: drain(steering, config.steeringMode ?? 'one-at-a-time'), suppressSteeringPoll: true };
  return { prompts: drain(followUps, config.followUpMode ?? 'one-at-a-time') };
}

/** A function, not an inline comparison: signal handlers change `abort` while the workflow awaits. */
function cancelRequested(s: Session): boolean {
  return s.abort === 'cancel';
}

function hasQueued(s: Session): boolean {
  return s.state.steering.length > 0 || s.state.followUps.length > 0;
}


function result(s: Session, status: RunStatus): AgentRunResult {
  const st = s.state;
  const newMessages = st.transcript.slice(st.newFrom);
  const last = lastAssistant(st.transcript, st.newFrom);
  const base: AgentRunResult = {
    status,
    finalText: last ? messageText(last) : '',
    newMessages,
    usage: st.usage,
    turns: st.turns,
    ...(st.modelCalls !== undefined ? { modelCalls: st.modelCalls } : {}),
    ...(st.lastError ? { error: st.lastError } : {}),
  };
  if (JSON.stringify(base).length <= MAX_RESULT_CHARS || unboundedPayloads(s)) return base;
  return { ...base, newMessages: [], newMessagesOmitted: { count: newMessages.length, fromIndex: st.newFrom } };
}

/** Ends the workflow. A run whose last assistant message is an error ends Failed (`AgentRunFailed`, result in details). */
function finish(s: Session, status: RunStatus): AgentRunResult {
  s.state.status = status;
  publish(s);
  const r = result(s, status);
  if (status === 'failed') {
    throw ApplicationFailure.create({ type: ErrorType.AgentRunFailed, message: r.error ?? 'agent run failed', nonRetryable: true, details: [r] });
  }
  return r;
}

/**
 * Ends the workflow as Canceled. After a `cancel` signal an activity asks Temporal to cancel this execution (a workflow
 * may not request its own cancellation), so the run closes exactly as after a client's cancellation request.
 */
async function cancelled(s: Session, temporalCancelled: boolean): Promise<never> {
  s.state.status = 'cancelled';
  publish(s);
  if (!temporalCancelled) {
    const info = workflowInfo();
    await setupActivities.requestCancel.executeWithOptions({ summary: `cancel: ${s.cancelReason ?? 'cancelled'}` }, [{ workflowId: info.workflowId, runId: info.runId }]);
  }
  await condition(() => false);
  throw new Error('unreachable: the cancellation request ends the workflow');
}

async function continueWith(s: Session, input: AgentRunInput, position: SessionState['position']): Promise<never> {
  const st = s.state;
  st.position = position;
  st.eventSeq = s.events.seq;
  st.continuedAsNew += 1;
  return continueAsNew<(i: AgentRunInput, c?: SessionState) => Promise<AgentRunResult>>({ model: input.model }, st);
}

