import { lastAssistant, messageText, type Message } from '../../common/messages.js';
import { toolSummary } from '../activities.js';
import type { RunningTool, SessionState } from './state.js';
import { treeDetails } from '../tree/approvals.js';
import { cacheUsageText } from '../../common/cache-usage.js';
import { fallbackDetails, modelChain } from './fallback.js';

/** `14:03:07 UTC`: start times in the details, so a reader sees how long a call has been running. */
function clockTime(ms: number): string {
  return `${new Date(ms).toISOString().slice(11, 19)} UTC`;
}

/** What the details show of the live session besides its state. */
export interface LiveDetails {
  /** The turn in progress (numbered as run and watch print it), else the turns completed. */
  turn: number;
  modelCallSince?: number;
  runningTools: ReadonlyMap<string, RunningTool>;
  /** The budget's lines (`RunBudget.details`). */
  budget: string[];
  /** What the running model call waits for under provider limits (`waiting for anthropic tokens/min: …`). */
  providerWait?: string;
}

/** Markdown shown as the workflow's current details in the Temporal UI (docs/architecture.md#visibility). */
export function renderDetails(st: SessionState, live: LiveDetails): string {
  const lines = [`**${st.status}** · turn ${live.turn} · ${st.transcript.length} messages`];
  // what a reviewer must act on comes first (issue 33 item 16), the full arguments and digest below
  const waiting = (st.pendingApprovals ?? []).map((p) => `${toolSummary(p.toolName, p.args)} (${p.toolCallId})`);
  if (waiting.length > 0) lines.unshift(`⚠ **awaiting approval**: ${waiting.join(', ')}`);
  for (const p of st.pendingApprovals ?? [])
    lines.push(
      `⚠ awaiting approval: ${p.toolName} ${JSON.stringify(p.args).slice(0, 200)} (${p.toolCallId}, digest ${p.argsDigest.slice(0, 12)}…)`,
    );
  lines.push(...treeDetails(st)); // the calls its sub-agents wait for (one approval desk)
  if (live.modelCallSince !== undefined)
    lines.push(`calling ${modelChain(st.config)[st.fallback?.index ?? 0]} since ${clockTime(live.modelCallSince)}`);
  if (live.providerWait) lines.push(`⏳ ${live.providerWait}`);
  if (live.runningTools.size > 0)
    lines.push(
      `running: ${[...live.runningTools.values()].map((t) => `${t.toolName} since ${clockTime(t.since)}`).join(', ')}`,
    );
  if (st.steering.length || st.followUps.length)
    lines.push(`queued: ${st.steering.length} steering, ${st.followUps.length} follow-up`);
  lines.push(`usage: ${st.usage.totalTokens} tokens · $${st.usage.cost.total.toFixed(4)}`);
  const cache = cacheUsageText(st.usage);
  if (cache) lines.push(cache);
  lines.push(...fallbackDetails(st));
  lines.push(...live.budget);
  if (st.rehomed) lines.push(`⚠ ${st.rehomed}`);
  if (st.lastError) lines.push(`error: ${st.lastError}`);
  const last = lastAssistant(st.transcript);
  if (last) lines.push(`last reply: ${messageText(last).slice(0, 200)}`);
  return lines.join('\n\n');
}
