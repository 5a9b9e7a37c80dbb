/**
 * What an activity input carries of the transcript besides its reference (from 0.8.0; an input payload, no patch), so
 * that a worker whose copy lacks only the newest messages does not ask the workflow for them
 * (docs/architecture.md#history-stays-linear): `callModel` gets the messages after the last assistant message (the
 * tool results and prompts of this turn), a tool activity its call. Each is sent only while small, so history still
 * grows by about the same bytes per turn however long the transcript is.
 */
import type { Message, ToolCall } from './messages.js';

/**
 * JSON characters a tail or a call may take in an activity input; a bigger one is read by reference only. What is
 * carried is written to history twice (in the input and as the message's own event), so the bound stays small: an
 * 8 KB tool result carried in the next model call's input made a run continue-as-new half again as often
 * (test/temporal/history.test.ts).
 */
export const TAIL_MAX_CHARS = 4 * 1024;

/** transcript[from, length) after the last assistant message, when small: `{ tail }` for a `callModel` input. */
export function transcriptTail(transcript: readonly Message[]): { tail?: Message[] } {
  let from = transcript.length;
  while (from > 0 && transcript[from - 1].role !== 'assistant') from -= 1;
  if (from === transcript.length) return {};
  const tail = transcript.slice(from);
  return JSON.stringify(tail).length <= TAIL_MAX_CHARS ? { tail } : {};
}

/** `{ call }` for a tool activity input, when its arguments are small. */
export function carriedCall(call: ToolCall): { call?: ToolCall } {
  return JSON.stringify(call).length <= TAIL_MAX_CHARS ? { call } : {};
}
