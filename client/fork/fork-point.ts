/**
 * Where a fork cuts a transcript (issue 37 item 2; docs/runs.md#fork-and-rewind). Pure: no I/O, so a counterfactual
 * replay can reuse it on any recorded transcript.
 *
 * A **turn** is what Keel numbers as one (`turn_start` … `turn_end`, `keel watch`'s `turn N`, the `state` query's
 * `turns`): one model call of the run — the user messages that opened it (the prompt, steering or follow-ups), the
 * assistant message, and the tool results after it. Turns number the run's own model calls across its continue-as-new
 * chain; assistant messages the run was started with (`messages` in its input, e.g. a fork's prefix) are not turns of
 * it. So turn `k` of a run is its `(prior + k)`-th assistant message, `prior` being the assistant messages it was given.
 */
import type { Message } from '../../common/messages.js';

/** The cut of a transcript at a turn. */
export interface ForkPoint {
  /** transcript[0, end): the first N turns (and everything before turn 1), up to the last tool result of turn N. */
  end: number;
  /**
   * transcript[0, next): the first N turns and the user messages that opened turn N + 1 — what the original sent the
   * model at turn N + 1 (the whole transcript when turn N + 1 has no assistant message yet).
   */
  next: number;
}

/** Assistant messages in `messages`. */
export function assistantCount(messages: readonly Message[]): number {
  return messages.reduce((n, m) => (m.role === 'assistant' ? n + 1 : n), 0);
}

/**
 * The cut after turn `atTurn` (0 ≤ atTurn ≤ the run's completed turns, checked by the caller) of a transcript whose
 * first `prior` assistant messages were given to the run, not made by it.
 */
export function forkPoint(transcript: readonly Message[], prior: number, atTurn: number): ForkPoint {
  const k = prior + atTurn; // the assistant message that closes turn atTurn (k = 0: none)
  let seen = 0;
  let end = 0;
  for (let i = 0; i < transcript.length; i++) {
    if (transcript[i].role !== 'assistant') continue;
    seen += 1;
    if (seen === k) {
      end = i + 1;
      while (end < transcript.length && transcript[end].role === 'toolResult') end += 1;
    } else if (seen === k + 1) return { end, next: i };
  }
  return { end, next: transcript.length };
}

/** Why `atTurn` cannot be forked from, or undefined. `turns`: the run's completed turns. */
export function badTurn(workflowId: string, atTurn: number, turns: number): string | undefined {
  if (!Number.isInteger(atTurn) || atTurn < 0)
    return `turn ${atTurn}: give a whole number from 0 to ${turns} (the turns run ${workflowId} has completed)`;
  if (atTurn > turns)
    return `turn ${atTurn}: run ${workflowId} has completed ${turns} turn${turns === 1 ? '' : 's'}; give a turn from 0 to ${turns}`;
  return undefined;
}
