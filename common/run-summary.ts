/**
 * The static summary a run is started with (the Web UI's one-line "Summary" of the workflow): the first line of its
 * prompt. `AgentClient.start` and the batch's children (`#<index> …`) use it. Deterministic, no I/O (the batch
 * workflow imports it).
 */
import type { AgentRunInput } from './run.js';

/** At most this many characters; a longer line is cut to 119 and ends with `…`. */
const MAX_SUMMARY = 120;

/**
 * `<label> <first line of the prompt>` (without a label: the first line alone), at most 120 characters: the prompt's
 * text, or its first message's (as JSON when it is a user message), or `(continue)` when there is no prompt.
 */
export function runSummary(input: AgentRunInput, label?: string): string {
  const p = input.prompt;
  const text =
    typeof p === 'string'
      ? p
      : Array.isArray(p) && p.length
        ? typeof p[0] === 'string'
          ? p[0]
          : JSON.stringify(p[0]?.content ?? '')
        : '(continue)';
  const first = text.split('\n', 1)[0];
  const line = label === undefined ? first : `${label} ${first}`;
  return line.length > MAX_SUMMARY ? `${line.slice(0, MAX_SUMMARY - 1)}…` : line;
}
