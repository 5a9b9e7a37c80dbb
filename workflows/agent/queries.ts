/** The queries of `agentWorkflow`: `state`, `messages` (the transcript, paged) and `events` (the bounded event log). */
import { setHandler } from '@temporalio/workflow';
import type { EventsPage } from '../../common/events.js';
import { lastAssistant, messageText, type Message } from '../../common/messages.js';
import type { AgentRunState, MessagesPage } from '../../common/run.js';
import { eventsQuery, mcpToolsQuery, messagesQuery, stateQuery, subAgentsQuery } from '../definitions.js';
import { treeDecided, treePending } from '../tree/approvals.js';
import type { AgentSession } from './session.js';
import { registerForkQuery } from './fork-query.js';

/** Largest `messages` page, in JSON characters; the reader pages on with `from`. */
const MAX_PAGE_CHARS = 1_000_000;
/** … when the workers offload large payloads (node-common/payload-storage.ts): a page goes to storage, not the reply. */
const MAX_OFFLOADED_PAGE_CHARS = 16 * 1024 * 1024;

export function registerQueries(s: AgentSession): void {
  setHandler(stateQuery, () => runState(s), { description: 'Status, turns, queued messages, running tools, usage.' });
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
  setHandler(mcpToolsQuery, () => s.state.tools.flatMap((t) => (t.mcp ? [t.mcp] : [])), {
    description: 'The MCP tools this run recorded at its start: [{ server, tool, description, parameters, … }].',
  });
  setHandler(subAgentsQuery, () => s.state.tools.flatMap((t) => (t.agent ? [{ name: t.name, ...t.agent }] : [])), {
    description: 'The sub-agents this run recorded at its start: [{ name, description, parameters, systemPrompt, … }].',
  });
  setHandler(eventsQuery, (opts) => withMessageIndex(s.events.page(opts?.after ?? 0, opts?.limit ?? 500), s), {
    description:
      'Agent events after sequence number `after` (bounded log): { events, lastSeq, firstSeq }; message_start and ' +
      "message_end carry the message's transcript index as messageIndex.",
  });
  registerForkQuery(s.state);
}

/**
 * The page with each `message_start`/`message_end` naming its message's transcript index (the live stream's deltas
 * name messages so, common/stream.ts). Found by reference (an event holds the transcript's message, not a copy), so
 * nothing is stored and the workflow's commands are unchanged; answered only by a query, never recorded.
 */
function withMessageIndex(page: EventsPage, s: AgentSession): EventsPage {
  if (!page.events.some((e) => e.type === 'message_start' || e.type === 'message_end')) return page;
  const index = new Map<Message, number>();
  s.state.transcript.forEach((m, i) => index.set(m, i));
  return {
    ...page,
    events: page.events.map((e) => {
      if (e.type !== 'message_start' && e.type !== 'message_end') return e;
      const i = index.get(e.message);
      return i === undefined ? e : { ...e, messageIndex: i };
    }),
  };
}

const isClosed = (status: string): boolean => ['completed', 'stopped', 'cancelled', 'failed'].includes(status);

/** The `state` query's answer. */
function runState(s: AgentSession): AgentRunState {
  const st = s.state;
  const reply = lastAssistant(st.transcript);
  const mcp = st.tools.flatMap((t) =>
    t.mcp
      ? [
          {
            name: t.name,
            server: t.mcp.server,
            ...(t.mcp.openWorld !== undefined ? { openWorld: t.mcp.openWorld } : {}),
          },
        ]
      : [],
  );
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
    ...(mcp.length ? { mcpTools: mcp } : {}),
    usage: st.usage,
    ...(st.fallback?.switches ? { fallback: st.fallback.last } : {}),
    ...(st.lastError ? { lastError: st.lastError } : {}),
    ...(s.closed && isClosed(st.status) && (st.steering.length > 0 || st.followUps.length > 0)
      ? { unprocessed: [...st.steering, ...st.followUps] }
      : {}),
    ...(reply ? { lastReply: messageText(reply).slice(0, 500) } : {}),
    continuedAsNew: st.continuedAsNew,
    pendingApprovals: [...s.desk.publicPending(), ...treePending(st)],
    approvals: [...s.desk.publicApprovals(), ...treeDecided(st)],
    ...s.budget.state(),
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
