/**
 * Context compaction (README "Compaction"), after Pi's own (pi-coding-agent `core/compaction`), written for Keel's
 * transcript. Pure functions shared by the workflow (when to compact, where to cut) and the activities (what the model
 * sees, the summary request).
 *
 * Representation: the transcript keeps every message. A compaction appends one entry *in place* — a `user` message
 * whose text is the summary wrapped as Pi wraps it (`The conversation history before this point was compacted…`) and
 * whose `compaction` field says which messages it replaces: `firstKept` is the index of the first message kept
 * verbatim. A model call then sees the projection of the transcript: the last compaction entry, the messages from its
 * `firstKept` up to it (older compaction entries left out), and everything after it.
 */
import type { Static } from 'typebox';
import type { COMPACTION_ENTRY_SCHEMA, COMPACTION_INFO_SCHEMA } from './message-schemas.js';
import type { Message, TextContent, Usage, UserMessage } from './messages.js';
import type { COMPACTION_CONFIG_SCHEMA } from './run-input-schema.js';

/** `compaction` of AgentRunInput: when the next call's estimated context exceeds `contextWindow - reserveTokens`. */
export type CompactionConfig = Static<typeof COMPACTION_CONFIG_SCHEMA>;

export const DEFAULT_RESERVE_TOKENS = 16384;
export const DEFAULT_KEEP_RECENT_TOKENS = 20000;

/** The `compaction` field of a compaction entry (`COMPACTION_INFO_SCHEMA`, common/message-schemas.ts). */
export type CompactionInfo = Static<typeof COMPACTION_INFO_SCHEMA>;

/** A compaction entry: a user message holding the wrapped summary (`COMPACTION_ENTRY_SCHEMA`). */
export type CompactionEntry = Static<typeof COMPACTION_ENTRY_SCHEMA>;

export const COMPACTION_SUMMARY_PREFIX =
  'The conversation history before this point was compacted into the following summary:\n\n<summary>\n';
export const COMPACTION_SUMMARY_SUFFIX = '\n</summary>';

export function isCompactionEntry(m: Message | undefined): m is CompactionEntry {
  return (
    m !== undefined &&
    m.role === 'user' &&
    typeof (m as { compaction?: unknown }).compaction === 'object' &&
    (m as { compaction?: unknown }).compaction !== null
  );
}

export function compactionEntry(summary: string, info: CompactionInfo, timestamp: number): CompactionEntry {
  return {
    role: 'user',
    content: [{ type: 'text', text: `${COMPACTION_SUMMARY_PREFIX}${summary}${COMPACTION_SUMMARY_SUFFIX}` }],
    timestamp,
    compaction: info,
  };
}

/** The summary text of a compaction entry (without Pi's wrapping). */
export function compactionSummaryText(entry: CompactionEntry): string {
  const text = (entry.content as TextContent[]).map((b) => b.text).join('');
  return text.startsWith(COMPACTION_SUMMARY_PREFIX) && text.endsWith(COMPACTION_SUMMARY_SUFFIX)
    ? text.slice(COMPACTION_SUMMARY_PREFIX.length, text.length - COMPACTION_SUMMARY_SUFFIX.length)
    : text;
}

/** Index of the last compaction entry, or -1. */
export function lastCompaction(messages: Message[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (isCompactionEntry(messages[i])) return i;
  return -1;
}

/**
 * Transcript indices the model sees, in order: [last entry, firstKept…entry (entries left out), after the entry…];
 * the whole transcript when nothing was compacted.
 */
export function projectedIndices(messages: Message[]): number[] {
  const c = lastCompaction(messages);
  if (c < 0) return messages.map((_, i) => i);
  const out = [c];
  const first = (messages[c] as CompactionEntry).compaction.firstKept;
  for (let i = first; i < messages.length; i++) if (i !== c && !isCompactionEntry(messages[i])) out.push(i);
  return out;
}

/** What a model call sees of the transcript (see the file comment). Without a compaction: the transcript itself. */
export function modelContext(messages: Message[]): Message[] {
  if (lastCompaction(messages) < 0) return messages;
  return projectedIndices(messages).map((i) => {
    const { compaction: _c, ...message } = messages[i] as CompactionEntry;
    return isCompactionEntry(messages[i]) ? (message as UserMessage) : messages[i];
  });
}

const IMAGE_CHARS = 4800;

/** Pi's estimate: characters / 4 (conservative), an image as 4800 characters. */
export function estimateTokens(m: Message): number {
  let chars = 0;
  if (typeof m.content === 'string') chars = m.content.length;
  else
    for (const b of m.content) {
      if (b.type === 'text') chars += b.text.length;
      else if (b.type === 'image') chars += IMAGE_CHARS;
      else if (b.type === 'thinking') chars += b.thinking.length;
      else if (b.type === 'toolCall') chars += b.name.length + JSON.stringify(b.arguments).length;
    }
  return Math.ceil(chars / 4);
}

function contextTokensOf(u: Usage): number {
  return u.totalTokens || u.input + u.output + u.cacheRead + u.cacheWrite;
}

/**
 * Estimated tokens of the next call's context (Pi's `estimateContextTokens`): the last assistant message's usage (its
 * whole context) plus an estimate of the messages after it; when no usable usage follows the last compaction, an
 * estimate of every projected message and the system prompt.
 */
export function estimateContext(messages: Message[], systemPrompt: string): number {
  // one walk back to the last usable usage, stopping at a compaction entry (usage before it is stale)
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (isCompactionEntry(m)) break;
    if (m.role !== 'assistant') continue;
    if (m.stopReason === 'error' || m.stopReason === 'aborted' || !m.usage || contextTokensOf(m.usage) === 0) continue;
    let trailing = 0;
    for (let k = i + 1; k < messages.length; k++) trailing += estimateTokens(messages[k]);
    return contextTokensOf(m.usage) + trailing;
  }
  let tokens = Math.ceil(systemPrompt.length / 4);
  for (const i of projectedIndices(messages)) tokens += estimateTokens(messages[i]);
  return tokens;
}

/** What to summarise: transcript[from, keepFrom) minus compaction entries, merged into the previous summary (if any). */
export interface CompactionPlan {
  from: number;
  keepFrom: number;
  /** Index of the compaction entry whose summary is updated, if any. */
  previous?: number;
  tokensBefore: number;
}

/**
 * Pi's cut point: walk back from the newest projected message, summing estimates, until `keepRecentTokens`; cut at the
 * nearest user or assistant message at or after that point (never at a tool result, which must follow its call).
 * Undefined when nothing older than the kept tail is left to summarise.
 */
export function planCompaction(
  messages: Message[],
  keepRecentTokens: number,
  tokensBefore: number,
): CompactionPlan | undefined {
  const c = lastCompaction(messages);
  const indices = projectedIndices(messages).filter((i) => i !== c);
  if (indices.length === 0) return undefined;
  const cutPoints = indices.filter((i) => messages[i].role !== 'toolResult');
  if (cutPoints.length === 0) return undefined;
  let cut = cutPoints[0];
  let sum = 0;
  for (let k = indices.length - 1; k >= 0; k--) {
    sum += estimateTokens(messages[indices[k]]);
    if (sum >= keepRecentTokens) {
      cut = cutPoints.find((i) => i >= indices[k]) ?? cutPoints[cutPoints.length - 1];
      break;
    }
  }
  const from = c < 0 ? 0 : (messages[c] as CompactionEntry).compaction.firstKept;
  if (!indices.some((i) => i < cut)) return undefined;
  return { from, keepFrom: cut, ...(c >= 0 ? { previous: c } : {}), tokensBefore };
}

// --- the summary request (our wording, Pi's structure) ---------------------------------------------------------------

export const SUMMARY_SYSTEM_PROMPT =
  'You summarise a conversation between a user and an AI agent so that another model can continue the work from the summary alone. ' +
  'Do not continue the conversation and do not answer questions in it: output only the summary, in the format asked for.';

const SUMMARY_FORMAT = `## Goal
[What the user wants; several items if the work covers several tasks.]

## Constraints & Preferences
- [Requirements and preferences the user stated, or "(none)"]

## Progress
### Done
- [x] [Completed work]

### In Progress
- [ ] [Current work]

### Blocked
- [Open problems, if any]

## Key Decisions
- **[Decision]**: [Why]

## Next Steps
1. [What should happen next, in order]

## Critical Context
- [Data, references and exact values needed to continue, or "(none)"]

Keep each section short. Keep exact file paths, names and error messages.`;

export const SUMMARY_PROMPT = `The conversation above is to be summarised as a checkpoint another model will continue from.\n\nUse exactly this format:\n\n${SUMMARY_FORMAT}`;

export const UPDATE_SUMMARY_PROMPT =
  `The conversation above is new: merge it into the summary in <previous-summary>. Keep everything still relevant from ` +
  `the previous summary, add the new progress, decisions and context, move finished items to Done and update Next Steps.\n\n` +
  `Use exactly this format:\n\n${SUMMARY_FORMAT}`;

const TOOL_RESULT_MAX_CHARS = 2000;

function textOf(content: Message['content']): string {
  if (typeof content === 'string') return content;
  return content
    .filter((b): b is TextContent => b.type === 'text')
    .map((b) => b.text)
    .join('\n');
}

/** The messages as plain text (`[User]: …`), so the model summarises rather than continues; tool results cut to 2000 characters, thinking left out. */
export function serializeConversation(messages: Message[]): string {
  const parts: string[] = [];
  for (const m of messages) {
    if (m.role === 'user') {
      const text = textOf(m.content);
      if (text) parts.push(`[User]: ${text}`);
    } else if (m.role === 'assistant') {
      const text = textOf(m.content.filter((b) => b.type === 'text'));
      if (text) parts.push(`[Assistant]: ${text}`);
      const calls = m.content.flatMap((b) =>
        b.type === 'toolCall'
          ? [
              `${b.name}(${
                typeof b.arguments === 'string'
                  ? JSON.stringify(b.arguments)
                  : Object.entries(b.arguments)
                      .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
                      .join(', ')
              })`,
            ]
          : [],
      );
      if (calls.length) parts.push(`[Assistant tool calls]: ${calls.join('; ')}`);
    } else {
      const text = textOf(m.content);
      if (text)
        parts.push(
          `[Tool result]: ${text.length > TOOL_RESULT_MAX_CHARS ? `${text.slice(0, TOOL_RESULT_MAX_CHARS)}\n\n[... ${text.length - TOOL_RESULT_MAX_CHARS} more characters truncated]` : text}`,
        );
    }
  }
  return parts.join('\n\n');
}

/** The one user message of a summary request. */
export function summaryRequestText(messages: Message[], previousSummary: string | undefined): string {
  let text = `<conversation>\n${serializeConversation(messages)}\n</conversation>\n\n`;
  if (previousSummary !== undefined) text += `<previous-summary>\n${previousSummary}\n</previous-summary>\n\n`;
  return text + (previousSummary !== undefined ? UPDATE_SUMMARY_PROMPT : SUMMARY_PROMPT);
}

/** The messages a plan summarises: transcript[from, keepFrom) without compaction entries. */
export function messagesToSummarize(messages: Message[], plan: Pick<CompactionPlan, 'from' | 'keepFrom'>): Message[] {
  return messages.slice(plan.from, plan.keepFrom).filter((m) => !isCompactionEntry(m));
}
