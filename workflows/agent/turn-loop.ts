/**
 * Pi's agent loop (docs/architecture.md#the-loop; aborts as in Pi's latest version): one agent run, from agent_start to agent_end.
 * Aborts are checked before every iteration, before each injected message and before each model call.
 */
import { toolCallsOf, type AssistantMessage, type UserMessage } from '../../common/messages.js';
import { drainQueue, restore, type SessionQueues } from './queues.js';
import { streamAssistant } from './model-step.js';
import { runToolBatch } from './tool-batch.js';
import { checkFinalAnswer, wantsTypedOutput } from './typed-output.js';
import type { AgentSession } from './session.js';
import type { LoopPosition, SessionState } from './state.js';

export type RunStart =
  { prompts: UserMessage[]; suppressSteeringPoll?: boolean } | { continue: true } | { resume: LoopPosition };

/**
 * `terminate`: the last tool batch asked to stop (Pi's terminate rule) and no queued message started another turn.
 * `historyFull`: history nears Temporal's limit and the transcript is too large to continue-as-new.
 * `budget`: the run's budget allows no further model call (workflows/agent/budget.ts).
 * `invalidOutput`: the final answer is not valid against the run's `output` and no repair is left (typed-output.ts).
 */
export type EndReason =
  'stop' | 'terminate' | 'error' | 'aborted' | 'maxTurns' | 'historyFull' | 'budget' | 'invalidOutput';
export type RunEnd = { kind: 'ended'; reason: EndReason } | { kind: 'continueAsNew'; position: LoopPosition };

/** One agent run of session `s` from `start` (new prompts, a continue, or a position carried by continue-as-new). */
export async function runAgentLoop(s: AgentSession, start: RunStart): Promise<RunEnd> {
  const st = s.state;
  const pos: LoopPosition =
    'resume' in start
      ? start.resume
      : { runStart: st.transcript.length, turnsInRun: 0, pending: [], pendingFrom: 'steering', moreToolCalls: true };
  const end = (reason: EndReason): RunEnd => endRun(s, pos, reason);
  let firstTurn = !('resume' in start);
  if (!('resume' in start)) {
    st.runs += 1;
    s.emit({ type: 'agent_start' });
    s.openTurn();
    for (const prompt of 'prompts' in start ? start.prompts : []) {
      if (s.abort) return end('aborted');
      s.append(prompt);
    }
    if (!('prompts' in start && start.suppressSteeringPoll)) poll(st, pos, 'steering');
  }
  for (;;) {
    while (pos.moreToolCalls || pos.pending.length > 0) {
      if (s.abort) return end('aborted');
      const suspended = pos.batch; // the turn's tool batch, carried across continue-as-new (workflows/agent/approvals.ts)
      pos.batch = undefined;
      if (!firstTurn && !suspended) s.openTurn();
      s.turnOpen = true; // also a turn resumed after continue-as-new
      firstTurn = false;
      while (pos.pending.length > 0) {
        if (s.abort) return end('aborted');
        s.append(pos.pending.shift()!);
      }
      if (s.abort) return end('aborted');
      const step = suspended ? undefined : await streamAssistant(s);
      const assistant = suspended ? (st.transcript[suspended.assistantIndex] as AssistantMessage) : step?.message;
      if (!assistant) return end('budget');
      const index = suspended ? suspended.assistantIndex : s.append(assistant);
      if (assistant.stopReason === 'error' || assistant.stopReason === 'aborted') {
        s.closeTurn(assistant, []);
        pos.turnsInRun += 1;
        return end(assistant.stopReason);
      }
      const batch =
        toolCallsOf(assistant).length > 0
          ? await runToolBatch(s, assistant, index, suspended, step?.toolSummaries)
          : undefined;
      if (batch?.suspended) return { kind: 'continueAsNew', position: { ...pos, batch: batch.suspended } };
      pos.moreToolCalls = batch !== undefined && !batch.terminate;
      pos.terminated = batch?.terminate === true;
      s.closeTurn(assistant, batch?.results ?? []);
      pos.turnsInRun += 1;
      if (pos.turnsInRun >= (st.config.maxTurns ?? 100)) return end('maxTurns');
      if (s.abort) return end('aborted');
      poll(st, pos, 'steering');
      const history = s.checkHistory();
      if (history.kind === 'continueAsNew') return { kind: 'continueAsNew', position: pos };
      if (history.kind === 'full') {
        st.lastError = history.message;
        return end('historyFull');
      }
    }
    if (s.abort) return end('aborted');
    poll(st, pos, 'followUp');
    if (pos.pending.length === 0 && !pos.terminated && wantsTypedOutput(st)) {
      const verdict = await checkFinalAnswer(st); // typed results: the answer must be valid JSON (typed-output.ts)
      if (s.abort) return end('aborted');
      if (verdict.kind === 'invalid') return end('invalidOutput');
      if (verdict.kind === 'repair') pos.pending = [verdict.message];
    }
    if (pos.pending.length === 0) return end(pos.terminated ? 'terminate' : 'stop');
  }
}

/** Drains the steering or follow-up queue into `pos.pending`, per the run's queue mode. */
function poll(q: SessionQueues, pos: LoopPosition, from: 'steering' | 'followUp'): void {
  pos.pending = drainQueue(q, from);
  pos.pendingFrom = from;
}

/** agent_end with this run's messages; drained-but-not-injected messages go back to the front of their queue. */
function endRun(s: AgentSession, pos: LoopPosition, reason: EndReason): RunEnd {
  s.turnOpen = false;
  restore(pos.pendingFrom === 'steering' ? s.state.steering : s.state.followUps, pos.pending.splice(0));
  const aborted =
    reason === 'aborted' && s.abort ? { reason: s.abort === 'interrupt' ? 'interrupted' : 'cancelled' } : {};
  s.emit({ type: 'agent_end', messages: s.state.transcript.slice(pos.runStart), ...(aborted as object) });
  return { kind: 'ended', reason };
}
