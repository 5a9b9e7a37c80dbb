/**
 * The report of one replayed run against its original (docs/runs.md#counterfactual-replay): same final answer or
 * not, the first turn where it diverged, its tool calls served from the record, run live or answered "not in the
 * record", and the tokens and cost of both, from the two runs as read by recorded-run.ts ({@link compareRuns}: pure).
 */
import { matchRecorded, NOT_IN_RECORD_PREFIX, recordedCalls } from '../../common/replay.js';
import { argsDigest, canonicalJson } from '../../node-common/args-digest.js';
import type { RecordedRun } from './recorded-run.js';

/** One replayed run against its original. */
export interface RunReplayReport {
  original: string;
  replay: string;
  status: string;
  sameAnswer: boolean;
  /** The first turn whose model message (text and tool calls) differs from the original's; absent: none. */
  divergedAtTurn?: number;
  /** The replay's tool calls: served from the record, run live, answered "not in the record". */
  tools: { record: number; live: number; notInRecord: number };
  old: { turns: number; tokens: number; cost: number };
  new: { turns: number; tokens: number; cost: number };
}

/** The model messages of a run's own turns, as compared: text and tool calls (name, canonical arguments), no ids. */
function turnsOf(r: RecordedRun): string[] {
  return r.messages.flatMap((m) =>
    m.role === 'assistant'
      ? [
          canonicalJson(
            m.content.flatMap((c): unknown[] =>
              c.type === 'text' ? [c.text] : c.type === 'toolCall' ? [[c.name, c.arguments]] : [],
            ),
          ),
        ]
      : [],
  );
}

/** Compares a replay with its original (pure). */
export function compareRuns(original: RecordedRun, replay: RecordedRun): RunReplayReport {
  const before = turnsOf(original);
  const after = turnsOf(replay);
  let diverged: number | undefined;
  for (let k = 0; k < Math.max(before.length, after.length); k++)
    if (before[k] !== after[k]) {
      diverged = k + 1;
      break;
    }
  const record = recordedCalls(original.messages, 0, argsDigest);
  const tools = { record: 0, live: 0, notInRecord: 0 };
  for (const c of recordedCalls(replay.messages, 0, argsDigest)) {
    if (!c.result) continue;
    const text = c.result.content.find((b) => b.type === 'text')?.text ?? '';
    if (matchRecorded(record, c)) tools.record += 1;
    else if (c.result.isError && text.startsWith(NOT_IN_RECORD_PREFIX)) tools.notInRecord += 1;
    else tools.live += 1;
  }
  return {
    original: original.workflowId,
    replay: replay.workflowId,
    status: replay.status,
    sameAnswer: original.finalText === replay.finalText,
    ...(diverged !== undefined ? { divergedAtTurn: diverged } : {}),
    tools,
    old: spent(original),
    new: spent(replay),
  };
}

const spent = (r: RecordedRun) => ({ turns: r.turns, tokens: r.usage.totalTokens, cost: r.usage.cost.total });
