import { workflowInfo } from '@temporalio/workflow';
import { PATCH } from '../patches.js';
import type { Message } from '../../common/messages.js';
import type { SessionState } from './state.js';
import { since } from '../since.js';

/** A continue-as-new input must fit one payload (2 MB server limit), with room to spare. */
const MAX_CARRIED_CHARS = 1_500_000;
const DEFAULT_AFTER_BYTES = 8 * 1024 * 1024;
/** Temporal terminates a workflow whose history passes 50 MB; Keel stops its run well before. */
const DEFAULT_MAX_HISTORY_BYTES = 40 * 1024 * 1024;

/** The patch id lifting the 1.5 MB caps on the carried state and the result when the workers offload large payloads. */
export const LARGE_PAYLOADS_PATCH = 'keel-large-payloads';

/**
 * The workers offload large payloads (README "Large transcripts"), so the continue-as-new input and the result may be
 * of any size: they go to external storage and history holds a reference. Behind `patched('keel-large-payloads')`.
 */
export function unboundedPayloads(largePayloads: boolean | undefined): boolean {
  return largePayloads === true && since(LARGE_PAYLOADS_PATCH);
}

/**
 * The characters of the messages' text, thinking and string content: at most their JSON's length (escapes only add),
 * counted without serialising them.
 */
export function textChars(messages: readonly Message[]): number {
  let n = 0;
  for (const m of messages) {
    const content = (m as { content?: unknown }).content;
    if (typeof content === 'string') n += content.length;
    else if (Array.isArray(content))
      for (const b of content as { text?: unknown; thinking?: unknown }[])
        n += typeof b.text === 'string' ? b.text.length : typeof b.thinking === 'string' ? b.thinking.length : 0;
  }
  return n;
}

/** Events below which a suggestion may be deferred (Temporal's hard limit is 51,200). */
const DEFER_MAX_EVENTS = 10_000;

/**
 * Temporal suggests continue-as-new at a history size (4 MB by default) that suits small state. A run whose carried
 * transcript is larger than what its own history grew by would write more by continuing (the transcript, to the payload
 * store, and read back by the next run) than it sheds: it continues at `continueAsNewAfterBytes` instead, so a run of
 * large tool results continues every 8 MB of history, not every 4, carrying its transcript half as often.
 */
function suggestionCostsMore(
  st: SessionState,
  info: { continueAsNewSuggested: boolean; historySize: number; historyLength: number },
  historyAtStart: number,
  limit: number,
): boolean {
  return (
    info.continueAsNewSuggested &&
    info.historySize < limit &&
    info.historyLength < DEFER_MAX_EVENTS &&
    textChars(st.transcript) > info.historySize - historyAtStart
  );
}

export type HistoryDecision = { kind: 'ok' } | { kind: 'continueAsNew' } | { kind: 'full'; message: string };

/**
 * At a turn boundary: continue-as-new when Temporal suggests it or this run's history grew by `continueAsNewAfterBytes`. When the
 * carried state is too large to carry, history keeps growing (checked again after another `continueAsNewAfterBytes`);
 * once it passes `maxHistoryBytes` the run must stop, before the server terminates it. `historyAtStart`: the history size
 * when this run started; `retryAt`: the size below which continue-as-new is not tried again. Returns the new `retryAt`
 * when the state was too large to carry (`AgentSession.checkHistory` keeps it).
 */
export function historyDecision(
  st: SessionState,
  historyAtStart: number,
  retryAt: number,
): HistoryDecision & { retryAt?: number } {
  const info = workflowInfo();
  const limit = st.config.continueAsNewAfterBytes ?? DEFAULT_AFTER_BYTES;
  const max = st.config.maxHistoryBytes ?? DEFAULT_MAX_HISTORY_BYTES;
  // what counts is growth in this run: a carried transcript larger than the limit must not continue after every turn
  let due = info.continueAsNewSuggested || info.historySize >= limit;
  if (due && !info.continueAsNewSuggested && info.historySize - historyAtStart < limit && since(PATCH.historyGrowth))
    due = false;
  if (due && suggestionCostsMore(st, info, historyAtStart, limit) && since(PATCH.largeCarryDefers)) due = false;
  if (!due || (info.historySize < retryAt && info.historySize < max)) return { kind: 'ok' };
  // a transcript whose text alone passes the cap is not serialised to measure it (≈ 100 MB: a second of the task)
  const carried = textChars(st.transcript) > MAX_CARRIED_CHARS ? undefined : JSON.stringify(st).length;
  if ((carried !== undefined && carried <= MAX_CARRIED_CHARS) || unboundedPayloads(st.largePayloads))
    return { kind: 'continueAsNew' };
  const next = info.historySize + limit;
  if (info.historySize < max) return { kind: 'ok', retryAt: next };
  const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
  return {
    kind: 'full',
    retryAt: next,
    message:
      `History reached ${mb(info.historySize)} MB of the ${mb(max)} MB this run allows, and the transcript (${mb(carried ?? JSON.stringify(st).length)} MB) is too ` +
      `large to carry into a continued run (${mb(MAX_CARRIED_CHARS)} MB at most). Start a new run with a shortened transcript in \`messages\`.`,
  };
}
