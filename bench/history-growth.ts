/** Section 2 of the bench: history bytes per turn of a long Keel run, and the naive full-transcript loop. */
import { randomUUID } from 'node:crypto';
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { BLOB_KB, QUEUE } from './fixtures.js';
import { bytesByEventType, failureOf, firstSuggestion, fetchChain, turnPoints, type Chain } from './history.js';
import type { NaiveInput } from './naive-workflow.js';
import type { Bench } from './context.js';
import { keelInput, keelRun } from './runs.js';

const HISTORY_TURNS = 500;
export const HISTORY_POINTS = [10, 100, 250, 500];

export async function historySection(b: Bench) {
  const { log, client, keel1 } = b;
  log(`history: one ${HISTORY_TURNS}-turn Keel run with ${BLOB_KB} KiB tool results`);
  const t = performance.now();
  const k = await keelRun(keel1, keelInput('bench-blob', ['blob'], HISTORY_TURNS));
  const keelSeconds = (performance.now() - t) / 1000;
  if (k.result.turns !== HISTORY_TURNS)
    throw new Error(`history run: ${k.result.status} after ${k.result.turns} turns`);
  const chain = await fetchChain(client, k.workflowId);
  const keel = turnPoints(chain, 'callModel', HISTORY_POINTS);
  const keelTime = turnTimes(chain, 'callModel', HISTORY_POINTS);
  log(`  Keel: ${keelSeconds.toFixed(1)} s, ${chain.runs} run(s), ${chain.events.length} events`);
  // Why (not) continue-as-new: Temporal's suggestion, and when the carried transcript passed 1.5 M JSON chars (the
  // transcript's size is estimated from the model and tool activity results, ≈ its JSON; querying the closed run
  // instead would replay its whole history for every page).
  const { chars, carriedCapTurn } = transcriptGrowth(chain);
  const suggestion = firstSuggestion(chain, 'callModel');

  log(`history: the naive loop (full transcript into every model activity), same replies and tool`);
  const naiveId = `bench-naive-${randomUUID()}`;
  const nt = performance.now();
  const handle = await client.workflow.start('naiveWorkflow', {
    taskQueue: QUEUE.bench,
    workflowId: naiveId,
    args: [
      { model: 'scripted/bench-blob', prompt: 'go', tools: ['blob'], maxTurns: HISTORY_TURNS } satisfies NaiveInput,
    ],
  });
  const outcome = await settleOrStall(handle, 15_000);
  const naiveSeconds = (performance.now() - nt) / 1000;
  const naiveChain = await fetchChain(client, naiveId);
  const seen = turnPoints(naiveChain, 'naiveCallModel', []).turnsSeen;
  const naive = turnPoints(naiveChain, 'naiveCallModel', [...HISTORY_POINTS.filter((p) => p < seen), seen]);
  const lastModelInput = naiveChain.events
    .filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'naiveCallModel')
    .map((e) =>
      (e.activityTaskScheduledEventAttributes?.input?.payloads ?? []).reduce(
        (n: number, p) => n + (p.data?.length ?? 0),
        0,
      ),
    );
  const naiveResult = {
    outcome: outcome.kind,
    failure: outcome.kind === 'completed' ? undefined : (failureOf(naiveChain.events) ?? outcome.message),
    modelCallsScheduled: naive.turnsSeen,
    /** Turns whose tool result was recorded before the run stopped. */
    turnsCompleted: completedTurns(naiveChain, 'naiveCallModel'),
    largestModelInputBytes: Math.max(0, ...lastModelInput),
    historyEvents: naiveChain.events.length,
    historyBytes: naive.points.length ? naive.points[naive.points.length - 1].bytes : 0,
    seconds: naiveSeconds,
    points: naive.points,
  };
  log(`  naive: ${naiveResult.outcome} after ${naiveResult.turnsCompleted} turns: ${naiveResult.failure ?? ''}`);
  const at = (turn: number) => keel.points.find((p) => p.turn === turn);
  return {
    turns: HISTORY_TURNS,
    toolResultKiB: BLOB_KB,
    measure:
      'bytes = sum of each HistoryEvent protobuf-encoded (HistoryEvent.encode(e).finish().length) over the whole continue-as-new chain; payloadBytes = sum of payload data bytes in those events',
    keel: {
      seconds: keelSeconds,
      runs: chain.runs,
      continuedAsNew: chain.runs - 1,
      events: chain.events.length,
      points: keel.points,
      msPerTurnAt: keelTime,
      bytesPerTurnByEventType: bytesByEventType(chain, 'callModel', 10, HISTORY_TURNS - 1),
      transcriptJsonChars: chars,
      continueAsNewSuggestedAt: suggestion ?? null,
      transcriptPast1500000CharsAtTurn: carriedCapTurn ?? null,
      perTurnGrowth: (at(500)?.bytesPerTurn ?? NaN) / (at(10)?.bytesPerTurn ?? NaN),
    },
    naive: naiveResult,
  };
}

/** JSON size of the transcript, estimated from the payloads of the model and tool activity results. */
function transcriptGrowth(chain: Chain): { chars: number; carriedCapTurn?: number } {
  const names = new Map<string, string>();
  let chars = 0;
  let turn = 0;
  let carriedCapTurn: number | undefined;
  for (const e of chain.events) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) names.set(String(e.eventId), name);
    if (name === 'callModel') turn += 1;
    const done = e.activityTaskCompletedEventAttributes;
    const activity = done ? names.get(String(done.scheduledEventId)) : undefined;
    if (activity === 'callModel' || activity === 'runToolCall')
      chars += (done?.result?.payloads ?? []).reduce((n: number, p) => n + (p.data?.length ?? 0), 0);
    if (carriedCapTurn === undefined && chars > 1_500_000) carriedCapTurn = turn;
  }
  return { chars, carriedCapTurn };
}

/** Milliseconds per turn around each point (mean over the 10 turns ending there), from history timestamps. */
export function turnTimes(chain: Chain, modelActivity: string, turns: number[]): Record<number, number> {
  const starts = chain.events.flatMap((e) =>
    e.activityTaskScheduledEventAttributes?.activityType?.name === modelActivity ? [e] : [],
  );
  const t = (e: (typeof chain.events)[number] | undefined) =>
    e?.eventTime ? Number(e.eventTime.seconds ?? 0) * 1000 + (e.eventTime.nanos ?? 0) / 1e6 : NaN;
  const end = chain.events[chain.events.length - 1];
  const out: Record<number, number> = {};
  for (const turn of turns) {
    if (turn > starts.length) continue;
    const from = Math.max(0, turn - 10);
    out[turn] = (t(turn < starts.length ? starts[turn] : end) - t(starts[from])) / (turn - from);
  }
  return out;
}

/** Turns whose model call completed (the naive run stops mid-turn when its next model input is refused). */
export function completedTurns(chain: Chain, modelActivity: string): number {
  const scheduled = new Map<string, string>();
  let n = 0;
  for (const e of chain.events) {
    const name = e.activityTaskScheduledEventAttributes?.activityType?.name;
    if (name) scheduled.set(String(e.eventId), name);
    const done = e.activityTaskCompletedEventAttributes;
    if (done && scheduled.get(String(done.scheduledEventId)) === modelActivity) n += 1;
  }
  return n;
}

/** Waits for the run to close; if its history stops growing for `stallMs` (a workflow task failing over and over), terminates it. */
export async function settleOrStall(
  handle: WorkflowHandle,
  stallMs: number,
): Promise<{ kind: 'completed' | 'failed' | 'terminated' | 'stalled'; message?: string }> {
  const result = handle.result().then(
    () => ({ kind: 'completed' as const }),
    (err) => ({
      kind:
        err instanceof WorkflowFailedError && /terminat/i.test(String(err.cause?.message ?? err.message))
          ? ('terminated' as const)
          : ('failed' as const),
      message: String(err?.cause?.message ?? err?.message),
    }),
  );
  let lastLength = -1;
  let lastChange = performance.now();
  for (;;) {
    const done = await Promise.race([result, new Promise<undefined>((r) => setTimeout(() => r(undefined), 2000))]);
    if (done) {
      const d = await handle.describe();
      return d.status.name === 'TERMINATED'
        ? { kind: 'terminated', message: 'message' in done ? done.message : undefined }
        : done;
    }
    const d = await handle.describe();
    if (d.historyLength !== lastLength) {
      lastLength = d.historyLength;
      lastChange = performance.now();
    } else if (performance.now() - lastChange > stallMs) {
      const history = await handle.fetchHistory();
      const message = failureOf(history.events ?? []);
      await handle.terminate('bench: no progress (stuck workflow task)');
      return { kind: 'stalled', message };
    }
  }
}
