/**
 * Pi's agent loop (docs/architecture.md#the-loop; aborts as in Pi's latest version): one agent run, from agent_start to agent_end.
 * Aborts are checked before every iteration, before each injected message and before each model call.
 */
import { toolCallsOf, type AssistantMessage, type ToolResultMessage, type UserMessage } from '../../common/messages.js';
import { drain, restore } from './queues.js';
import { streamAssistant } from './model-step.js';
import { runToolBatch } from './tool-batch.js';
import { toolBatchHost } from './tool-batch-host.js';
import { historyDecision } from './continue-as-new.js';
import { publishDetails, publishTurnEnd } from './visibility.js';
import { appendMessage, type LoopPosition, type Session } from './session.js';

export type RunStart =
  { prompts: UserMessage[]; suppressSteeringPoll?: boolean } | { continue: true } | { resume: LoopPosition };

/**
 * `terminate`: the last tool batch asked to stop (Pi's terminate rule) and no queued message started another turn.
 * `historyFull`: history nears Temporal's limit and the transcript is too large to continue-as-new.
 * `budget`: the run's budget allows no further model call (workflows/agent/budget.ts).
 */
export type EndReason = 'stop' | 'terminate' | 'error' | 'aborted' | 'maxTurns' | 'historyFull' | 'budget';
export type RunEnd = { kind: 'ended'; reason: EndReason } | { kind: 'continueAsNew'; position: LoopPosition };

export async function runAgentLoop(s: Session, start: RunStart): Promise<RunEnd> {
  const st = s.state;
  const pos: LoopPosition =
    'resume' in start
      ? start.resume
      : { runStart: st.transcript.length, turnsInRun: 0, pending: [], pendingFrom: 'steering', moreToolCalls: true };
  let firstTurn = !('resume' in start);
  if (!('resume' in start)) {
    st.runs += 1;
    s.events.emit({ type: 'agent_start' });
    turnStart(s);
    for (const prompt of 'prompts' in start ? start.prompts : []) {
      if (s.abort) return end(s, pos, 'aborted');
      appendMessage(s, prompt);
    }
    if (!('prompts' in start && start.suppressSteeringPoll)) poll(s, pos, 'steering');
  }
  for (;;) {
    while (pos.moreToolCalls || pos.pending.length > 0) {
      if (s.abort) return end(s, pos, 'aborted');
      const suspended = pos.batch; // the turn's tool batch, carried across continue-as-new (workflows/agent/approvals.ts)
      pos.batch = undefined;
      if (!firstTurn && !suspended) turnStart(s);
      s.turnOpen = true; // also a turn resumed after continue-as-new
      firstTurn = false;
      while (pos.pending.length > 0) {
        if (s.abort) return end(s, pos, 'aborted');
        appendMessage(s, pos.pending.shift()!);
      }
      if (s.abort) return end(s, pos, 'aborted');
      const assistant = suspended
        ? (st.transcript[suspended.assistantIndex] as AssistantMessage)
        : await streamAssistant(s);
      if (!assistant) return end(s, pos, 'budget');
      const index = suspended ? suspended.assistantIndex : appendMessage(s, assistant);
      if (assistant.stopReason === 'error' || assistant.stopReason === 'aborted') {
        turnEnd(s, pos, assistant, []);
        return end(s, pos, assistant.stopReason);
      }
      const batch =
        toolCallsOf(assistant).length > 0
          ? await runToolBatch(toolBatchHost(s), assistant, index, suspended)
          : undefined;
      if (batch?.suspended) return { kind: 'continueAsNew', position: { ...pos, batch: batch.suspended } };
      pos.moreToolCalls = batch !== undefined && !batch.terminate;
      pos.terminated = batch?.terminate === true;
      turnEnd(s, pos, assistant, batch?.results ?? []);
      if (pos.turnsInRun >= (st.config.maxTurns ?? 100)) return end(s, pos, 'maxTurns');
      if (s.abort) return end(s, pos, 'aborted');
      poll(s, pos, 'steering');
      const history = historyDecision(s);
      if (history.kind === 'continueAsNew') return { kind: 'continueAsNew', position: pos };
      if (history.kind === 'full') {
        s.state.lastError = history.message;
        return end(s, pos, 'historyFull');
      }
    }
    if (s.abort) return end(s, pos, 'aborted');
    poll(s, pos, 'followUp');
    if (pos.pending.length === 0) return end(s, pos, pos.terminated ? 'terminate' : 'stop');
  }
}

function poll(s: Session, pos: LoopPosition, from: 'steering' | 'followUp'): void {
  const queue = from === 'steering' ? s.state.steering : s.state.followUps;
  pos.pending = drain(
    queue,
    (from === 'steering' ? s.state.config.steeringMode : s.state.config.followUpMode) ?? 'one-at-a-time',
  );
  pos.pendingFrom = from;
}

/**
 * turn_start with the turn's number in the conversation (the completed turns + 1), and the details say it: run, watch,
 * status and the details agree on the number of the turn in progress. The details are no command.
 */
function turnStart(s: Session): void {
  s.events.emit({ type: 'turn_start', turn: s.state.turns + 1 });
  s.turnOpen = true;
  publishDetails(s);
}

function turnEnd(s: Session, pos: LoopPosition, message: AssistantMessage, toolResults: ToolResultMessage[]): void {
  s.events.emit({ type: 'turn_end', message, toolResults });
  s.turnOpen = false;
  s.state.turns += 1;
  pos.turnsInRun += 1;
  publishTurnEnd(s);
}

/** agent_end with this run's messages; drained-but-not-injected messages go back to the front of their queue. */
function end(s: Session, pos: LoopPosition, reason: EndReason): RunEnd {
  s.turnOpen = false;
  restore(pos.pendingFrom === 'steering' ? s.state.steering : s.state.followUps, pos.pending.splice(0));
  const aborted =
    reason === 'aborted' && s.abort ? { reason: s.abort === 'interrupt' ? 'interrupted' : 'cancelled' } : {};
  s.events.emit({ type: 'agent_end', messages: s.state.transcript.slice(pos.runStart), ...(aborted as object) });
  return { kind: 'ended', reason };
}
