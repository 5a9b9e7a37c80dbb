import { messageText, type AssistantMessage, type Message } from '../common/messages.js';
import { budgetDetails } from './budget.js';
import type { Session } from './session.js';

export function lastAssistant(transcript: Message[], from = 0): AssistantMessage | undefined {
  for (let i = transcript.length - 1; i >= from; i--) if (transcript[i].role === 'assistant') return transcript[i] as AssistantMessage;
  return undefined;
}

/** Markdown shown as the workflow's current details in the Temporal UI (keel.md §5). */
export function renderDetails(s: Session): string {
  const st = s.state;
  const lines = [`**${st.status}** · turn ${st.turns} · ${st.transcript.length} messages`];
  if (s.runningTools.size > 0) lines.push(`running: ${[...s.runningTools.values()].join(', ')}`);
  if (st.steering.length || st.followUps.length) lines.push(`queued: ${st.steering.length} steering, ${st.followUps.length} follow-up`);
  lines.push(`usage: ${st.usage.totalTokens} tokens · $${st.usage.cost.total.toFixed(4)}`);
  lines.push(...budgetDetails(s));
  if (st.lastError) lines.push(`error: ${st.lastError}`);
  const last = lastAssistant(st.transcript);
  if (last) lines.push(`last reply: ${messageText(last).slice(0, 200)}`);
  return lines.join('\n\n');
}
