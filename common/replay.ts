/**
 * Counterfactual replay (issue 37 item 3; docs/runs.md#counterfactual-replay): the record of a run's tool calls and
 * the rule that matches a replay's call to it. Pure and sandbox-safe (no I/O): the tool activities serve calls with it
 * and the client's report recomputes the same decisions from the two transcripts.
 */
import type { AgentRunInput } from './run.js';
import type { Message, ToolResultMessage } from './messages.js';

/** What a replay does with a call that has no recorded match: answer "not in the record", or run it for real. */
export type LiveTools = 'none' | 'idempotent' | 'all';
export const LIVE_TOOLS: readonly LiveTools[] = ['none', 'idempotent', 'all'];

/** The run input's `replay`: the recorded run a run replays. */
export type ReplaySpec = NonNullable<AgentRunInput['replay']>;

/** What the workflow sends a tool activity of a replaying run: the spec, the turn, each call's position in its message. */
export type ReplayRef = ReplaySpec & { turn: number; at: number[] };

/** Where a call is in a conversation and what it is: turn (the run's own model calls, from 1), position, name, digest. */
export interface CallPosition {
  turn: number;
  index: number;
  name: string;
  /** sha256 of the arguments' canonical JSON (node-common/args-digest.ts `argsDigest`). */
  digest: string;
}

/** A recorded call and its result (absent when the record has none, e.g. the run was cut short there). */
export interface RecordedCall extends CallPosition {
  result?: ToolResultMessage;
}

/**
 * The tool calls of a transcript with their results, in order. `given`: the messages the run was started with (their
 * assistant messages are not turns of it); `digest` hashes a call's arguments.
 */
export function recordedCalls(
  transcript: readonly Message[],
  given: number,
  digest: (args: unknown) => string,
): RecordedCall[] {
  const out: RecordedCall[] = [];
  const results = new Map<string, ToolResultMessage>();
  let turn = 0;
  for (let i = transcript.length - 1; i >= given; i--) {
    const m = transcript[i];
    if (m.role === 'toolResult') results.set(m.toolCallId, m);
  }
  for (let i = given; i < transcript.length; i++) {
    const m = transcript[i];
    if (m.role !== 'assistant') continue;
    turn += 1;
    let index = 0;
    for (const c of m.content) {
      if (c.type !== 'toolCall') continue;
      const result = results.get(c.id);
      out.push({ turn, index, name: c.name, digest: digest(c.arguments), ...(result ? { result } : {}) });
      index += 1;
    }
  }
  return out;
}

/**
 * The matching rule: the recorded call at the same position (turn and index in its message) when it has the same
 * tool name and arguments digest; else the latest recorded call at an earlier position with that name and digest;
 * else none. Only calls with a recorded result match. Stateless and deterministic: a retried activity decides alike.
 */
export function matchRecorded(record: readonly RecordedCall[], at: CallPosition): RecordedCall | undefined {
  const same = (c: RecordedCall) => c.name === at.name && c.digest === at.digest && c.result !== undefined;
  const exact = record.find((c) => c.turn === at.turn && c.index === at.index);
  if (exact && same(exact)) return exact;
  for (let i = record.length - 1; i >= 0; i--) {
    const c = record[i];
    const earlier = c.turn < at.turn || (c.turn === at.turn && c.index < at.index);
    if (earlier && same(c)) return c;
  }
  return undefined;
}

/** Whether a call with no recorded match runs for real under `liveTools` (`idempotent`: tools declared so). */
export function runsLive(liveTools: LiveTools | undefined, idempotent: boolean): boolean {
  return liveTools === 'all' || (liveTools === 'idempotent' && idempotent);
}

/** The error result of a call a replay neither found in the record nor ran (asserted by tests: exact). */
export function notInRecordText(workflowId: string, name: string, turn: number, liveTools: LiveTools = 'none'): string {
  const why =
    liveTools === 'idempotent'
      ? `this replay runs only idempotent tools live (--live-tools idempotent) and ${name} is not declared idempotent`
      : 'this replay runs no tool live (--live-tools none)';
  return `Not in the record: run ${workflowId} made no call of ${name} with these arguments at turn ${turn} or before; ${why}. The tool did not run.`;
}

/** A replay's result text starts so when a call was answered "not in the record". */
export const NOT_IN_RECORD_PREFIX = 'Not in the record: ';
