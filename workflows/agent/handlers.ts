import { setHandler } from '@temporalio/workflow';
import { messageText, type Message } from '../../common/messages.js';
import { lastAssistant } from './details.js';
import { budgetState } from './budget.js';
import type { AgentRunState, MessagesPage } from '../../common/run.js';
import {
  wakeSignal,
  cancelSignal,
  endSignal,
  eventsQuery,
  followUpSignal,
  interruptSignal,
  messagesQuery,
  stateQuery,
  steerSignal,
} from '../definitions.js';
import { toUserMessages } from './incoming.js';
import { enqueue } from './queues.js';
import { abortSession, agentRunning, type Session } from './session.js';
import { publicApprovals, publicPending } from './approvals.js';
import { publishDetails } from './visibility.js';

/** Largest `messages` page, in JSON characters; the reader pages on with `from`. */
const MAX_PAGE_CHARS = 1_000_000;
/** … when the workers offload large payloads (common/payload-storage.ts): a page goes to storage, not the reply. */
const MAX_OFFLOADED_PAGE_CHARS = 16 * 1024 * 1024;

export function registerHandlers(s: Session): void {
  setHandler(
    followUpSignal,
    (m) => {
      enqueue(s.state, 'followUp', toUserMessages(m));
      publishDetails(s);
    },
    { description: 'Queue a user message for when the agent would stop; starts a new agent run in a waiting session.' },
  );
  setHandler(
    steerSignal,
    (m) => {
      enqueue(s.state, 'steering', toUserMessages(m));
      publishDetails(s);
    },
    { description: 'Queue a user message injected after the current tool batch, before the next model call.' },
  );
  setHandler(
    interruptSignal,
    () => {
      if (agentRunning(s)) abortSession(s, 'interrupt');
    },
    { description: 'Abort the current agent run at the next boundary; a session then waits for input.' },
  );
  setHandler(
    cancelSignal,
    (reason) => {
      s.cancelReason = typeof reason === 'string' && reason ? reason : 'cancelled'; // a malformed reason still cancels
      abortSession(s, 'cancel');
    },
    { description: 'Abort the current agent run and end the workflow as Canceled.' },
  );
  setHandler(
    endSignal,
    () => {
      s.endRequested = true;
    },
    { description: 'Finish a session once idle: the workflow completes with status completed.' },
  );
  // the signal itself is the point: its workflow task refreshes workflowInfo(), which an idle session re-checks
  setHandler(wakeSignal, () => undefined, {
    description: 'An idle session moves to the current deployment version, if it changed.',
  });
  setHandler(stateQuery, () => state(s), { description: 'Status, turns, queued messages, running tools, usage.' });
  setHandler(
    messagesQuery,
    (opts) =>
      messagesPage(
        s.state.transcript,
        opts?.from ?? 0,
        opts?.limit ?? 200,
        s.state.largePayloads ? MAX_OFFLOADED_PAGE_CHARS : MAX_PAGE_CHARS,
      ),
    {
      description: 'Transcript page: { from = 0, limit = 200 } → { messages, from, total }.',
    },
  );
  setHandler(eventsQuery, (opts) => s.events.page(opts?.after ?? 0, opts?.limit ?? 500), {
    description: 'Agent events after sequence number `after` (bounded log): { events, lastSeq, firstSeq }.',
  });
}

const isClosed = (status: string): boolean => ['completed', 'stopped', 'cancelled', 'failed'].includes(status);

function state(s: Session): AgentRunState {
  const st = s.state;
  const reply = lastAssistant(st.transcript);
  return {
    status: st.status,
    mode: st.config.mode ?? 'task',
    model: st.config.model,
    turns: st.turns,
    ...(s.turnOpen ? { turn: st.turns + 1 } : {}),
    runs: st.runs,
    messageCount: st.transcript.length,
    queued: { steering: st.steering.length, followUp: st.followUps.length },
    runningTools: [...s.runningTools].map(([toolCallId, t]) => ({
      toolCallId,
      toolName: t.toolName,
      startedAt: new Date(t.since).toISOString(),
    })),
    usage: st.usage,
    ...(st.lastError ? { lastError: st.lastError } : {}),
    ...(s.closed && isClosed(st.status) && (st.steering.length > 0 || st.followUps.length > 0)
      ? { unprocessed: [...st.steering, ...st.followUps] }
      : {}),
    ...(reply ? { lastReply: messageText(reply).slice(0, 500) } : {}),
    continuedAsNew: st.continuedAsNew,
    pendingApprovals: publicPending(s),
    approvals: publicApprovals(s),
    ...budgetState(s),
  };
}

function messagesPage(transcript: Message[], from: number, limit: number, maxChars: number): MessagesPage {
  const start = Math.max(0, Math.min(from, transcript.length));
  const messages: Message[] = [];
  let chars = 0;
  for (let i = start; i < transcript.length && messages.length < Math.max(1, limit); i++) {
    chars += JSON.stringify(transcript[i]).length;
    if (messages.length > 0 && chars > maxChars) break;
    messages.push(transcript[i]);
  }
  return { messages, from: start, total: transcript.length };
}
