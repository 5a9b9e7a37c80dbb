/**
 * Bench section `replay` (docs/runs.md#counterfactual-replay): what a counterfactual replay costs per run against a
 * fresh run. BENCH_REPLAY_RUNS runs of `scripted/bench-noop` (a no-op tool call every turn, BENCH_REPLAY_TURNS turns)
 * run as a fresh batch, then replay as a batch with the same model — every tool call served from the record — over
 * BENCH_ROUNDS rounds (medians). Reported: wall time per run of the fresh batch and of the replay (its planning: one
 * read of each original; its batch; its report, which reads both runs), and the history of one run of each (events,
 * bytes): the replay's command sequence is a fresh run's, the record stays out of its history.
 */
import { randomUUID } from 'node:crypto';
import type { AgentRunInput } from '../common/run.js';
import { ROUNDS, type Bench } from './context.js';
import { eventBytes, fetchChain } from './history.js';
import { keelInput } from './runs.js';

const RUNS = Math.max(1, Number(process.env.BENCH_REPLAY_RUNS ?? 50));
const TURNS = Math.max(2, Number(process.env.BENCH_REPLAY_TURNS ?? 5));
const CONCURRENCY = Math.max(1, Number(process.env.BENCH_BATCH_CONCURRENCY ?? 20));
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const seconds = (since: number) => (performance.now() - since) / 1000;

/** One round: a fresh batch, its replay (planned, run, reported); seconds of each and the two batch ids. */
async function round(b: Bench, tasks: AgentRunInput[]) {
  const freshId = `bench-replay-src-${randomUUID().slice(0, 8)}`;
  let t = performance.now();
  const fresh = await (await b.keel1.startBatch(tasks, { batchId: freshId, concurrency: CONCURRENCY })).result();
  if (fresh.total !== RUNS) throw new Error(`fresh batch: ${fresh.total}/${RUNS} tasks`);
  const freshS = seconds(t);
  t = performance.now();
  const replay = await b.keel1.replay({ batch: freshId }, { concurrency: CONCURRENCY });
  const planS = seconds(t);
  await replay.batch.result();
  const replayS = seconds(t);
  t = performance.now();
  const report = await replay.report();
  const reportS = seconds(t);
  if (report.tools.live + report.tools.notInRecord > 0 || report.sameAnswers !== RUNS)
    throw new Error(`replay: ${report.sameAnswers}/${RUNS} same answers, tools ${JSON.stringify(report.tools)}`);
  b.log(
    `  fresh ${freshS.toFixed(1)} s; replay ${replayS.toFixed(1)} s (planning ${planS.toFixed(1)} s); report ${reportS.toFixed(1)} s; ${report.tools.record} tool calls from the record`,
  );
  return { freshS, planS, replayS, reportS, freshId, replayId: replay.batch.workflowId, served: report.tools.record };
}

/** Events and bytes of one run's history (its whole chain). */
async function historyOf(b: Bench, workflowId: string) {
  const { events } = await fetchChain(b.client, workflowId);
  return { events: events.length, bytes: events.reduce((n, e) => n + eventBytes(e), 0) };
}

export async function replaySection(b: Bench) {
  const tasks = Array.from({ length: RUNS }, () => keelInput('bench-noop', ['noop'], TURNS));
  b.log(
    `replay: ${RUNS} runs of ${TURNS} turns (a no-op tool call each), fresh then replayed, concurrency ${CONCURRENCY}`,
  );
  const rounds = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push(await round(b, tasks));
  const last = rounds[rounds.length - 1];
  const perRun = (xs: number[]) => (median(xs) * 1000) / RUNS;
  return {
    runs: RUNS,
    turns: TURNS,
    concurrency: CONCURRENCY,
    rounds: ROUNDS,
    toolCallsServedPerRound: last.served,
    /** Wall time per run (ms; medians over the rounds): the fresh batch, the replay's planning and whole batch, its report. */
    freshMsPerRun: perRun(rounds.map((r) => r.freshS)),
    replayMsPerRun: perRun(rounds.map((r) => r.replayS)),
    planMsPerRun: perRun(rounds.map((r) => r.planS)),
    reportMsPerRun: perRun(rounds.map((r) => r.reportS)),
    history: { fresh: await historyOf(b, `${last.freshId}-0`), replay: await historyOf(b, `${last.replayId}-0`) },
  };
}
