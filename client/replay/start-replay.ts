/**
 * Counterfactual replay (issue 37 item 3; docs/runs.md#counterfactual-replay): recorded runs run again, as the tasks of
 * a batch, with another model or system prompt; their tool calls are served from the record (activities/replay/). A
 * task's input is the original's from before its first turn (`forkInput` at turn 0, client/fork/plan-fork.ts) and
 * `replay`, naming the original run; the report compares each replay with its original (run-report.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { AgentBatchResult } from '../../common/batch-definitions.js';
import type { Budget } from '../../common/budget.js';
import type { GradedTaskFields, GradingSummary } from '../../common/grading.js';
import type { LiveTools } from '../../common/replay.js';
import type { AgentRunInput } from '../../common/run.js';
import type { AgentBatchHandle, StartBatchOptions } from '../batch-client.js';
import { batchInputOf, batchOutcomes } from '../batch-retry.js';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { forkInput, planFork } from '../fork/plan-fork.js';
import { compareRuns, type RunReplayReport } from './run-report.js';
import { closedRecord, readRecordedRun } from './recorded-run.js';

/** What to replay: runs by workflow id, the runs of a batch, or the runs a visibility query finds. */
export type ReplaySource = { runs: string[] } | { batch: string } | { query: string };

/** What `AgentClient.replay` takes besides the source. */
export interface ReplayOptions {
  /** The model the runs replay with (default each original's). */
  model?: string;
  /** The system prompt the runs replay with (default each original's). */
  system?: string;
  /** A call with no recorded match: `none` (default) answers "not in the record", `idempotent` runs idempotent tools, `all` runs it. */
  liveTools?: LiveTools;
  /** Grade every replay so (default: a batch's tasks keep their own `expected` / `grader`). */
  grade?: GradedTaskFields;
  /** The replay batch's id (default `replay-<8 hex>`). */
  batchId?: string;
  concurrency?: number;
  /** One budget for the whole replay, as a batch's. */
  budget?: Budget;
}

/** The replay of a set of runs: the batch it runs as, and the report once it has finished. */
export interface ReplayReport {
  batchId: string;
  runs: RunReplayReport[];
  /** Replays whose final answer is the original's. */
  sameAnswers: number;
  tools: { record: number; live: number; notInRecord: number };
  old: { tokens: number; cost: number };
  new: { tokens: number; cost: number };
  /** The graders' summaries of the originals' batch (when it was graded) and of the replay. */
  grading?: { old?: GradingSummary; new?: GradingSummary };
}

/** A replay under way: its batch and the originals, task `i` replaying `originals[i]`. */
export class ReplayHandle {
  constructor(
    readonly batch: AgentBatchHandle,
    readonly originals: string[],
    private readonly client: Client,
    private readonly oldGrading?: GradingSummary,
  ) {}

  /** Task `i`'s replay against its original `id`. */
  private async compare(id: string, i: number): Promise<RunReplayReport> {
    const [before, after] = await Promise.all([
      readRecordedRun(this.client.workflow.getHandle(id)),
      readRecordedRun(this.client.workflow.getHandle(`${this.batch.workflowId}-${i}`)),
    ]);
    return compareRuns(before, after);
  }

  /** Waits for every replay to finish, then compares each with its original. */
  async report(): Promise<ReplayReport> {
    const result: AgentBatchResult = await this.batch.result();
    const runs: RunReplayReport[] = [];
    // a few runs at a time: each read is three queries, which a worker answers by replaying the run
    for (let from = 0; from < this.originals.length; from += READ_AT_ONCE)
      runs.push(
        ...(await Promise.all(
          this.originals.slice(from, from + READ_AT_ONCE).map((id, k) => this.compare(id, from + k)),
        )),
      );
    const sum = (f: (r: RunReplayReport) => number) => runs.reduce((n, r) => n + f(r), 0);
    const grading = result.grading || this.oldGrading ? { old: this.oldGrading, new: result.grading } : undefined;
    return {
      batchId: this.batch.workflowId,
      runs,
      sameAnswers: runs.filter((r) => r.sameAnswer).length,
      tools: {
        record: sum((r) => r.tools.record),
        live: sum((r) => r.tools.live),
        notInRecord: sum((r) => r.tools.notInRecord),
      },
      old: { tokens: sum((r) => r.old.tokens), cost: sum((r) => r.old.cost) },
      new: { tokens: sum((r) => r.new.tokens), cost: sum((r) => r.new.cost) },
      ...(grading ? { grading: strip(grading) } : {}),
    };
  }
}

/** Runs whose record and replay a report reads at once. */
const READ_AT_ONCE = 8;

const strip = (g: { old?: GradingSummary; new?: GradingSummary }) => ({
  ...(g.old ? { old: g.old } : {}),
  ...(g.new ? { new: g.new } : {}),
});

/** The originals of `source` in order, the grading fields of each (a batch's tasks'), and a batch's own grading. */
export async function originalsOf(
  client: Client,
  source: ReplaySource,
): Promise<{ ids: string[]; graded: (GradedTaskFields | undefined)[]; grading?: GradingSummary }> {
  if ('runs' in source) return { ids: source.runs, graded: source.runs.map(() => undefined) };
  if ('query' in source) {
    const ids: string[] = [];
    for await (const w of client.workflow.list({ query: source.query }))
      if (w.type === 'agentWorkflow') ids.push(w.workflowId);
    return { ids: ids.reverse(), graded: ids.map(() => undefined) };
  }
  const handle = client.workflow.getHandle(source.batch);
  const [outcomes, { tasks }, result] = await Promise.all([
    batchOutcomes(handle),
    batchInputOf(client, source.batch),
    handle.result() as Promise<AgentBatchResult>,
  ]);
  const gradedOf = (t: AgentRunInput & GradedTaskFields) =>
    t.expected !== undefined || t.grader !== undefined
      ? { ...(t.expected !== undefined ? { expected: t.expected } : {}), ...(t.grader ? { grader: t.grader } : {}) }
      : undefined;
  return {
    ids: outcomes.map((r) => r.workflowId),
    graded: outcomes.map((r) => gradedOf(tasks[r.task ?? r.index] as AgentRunInput & GradedTaskFields)),
    ...(result.grading ? { grading: result.grading } : {}),
  };
}

/** The replay task of the run `id`: its input before turn 1 with the new model or prompt, `replay` naming it. */
export async function replayTask(
  client: Client,
  id: string,
  opts: ReplayOptions,
  graded: GradedTaskFields | undefined,
): Promise<AgentRunInput & GradedTaskFields> {
  const changes = {
    atTurn: 0,
    ...(opts.model !== undefined ? { model: opts.model } : {}),
    ...(opts.system !== undefined ? { system: opts.system } : {}),
  };
  const closed = await closedStart(client, id);
  const { input, runId } = closed
    ? { input: forkInput(id, closed.recorded, changes), runId: closed.runId }
    : await planFork(client.workflow.getHandle(id), changes).then((p) => ({ input: p.input, runId: p.memo.runId }));
  const grade = opts.grade ?? graded;
  return {
    ...input,
    mode: 'task', // a session replays up to its first answer: its follow-ups are not replayed
    replay: { workflowId: id, runId, liveTools: opts.liveTools ?? 'none' },
    ...(grade ?? {}),
  };
}

/**
 * What `forkInput` needs of a closed run, without a query (no worker replays it): its configuration and the messages
 * it was given from its chain's first start event, its own messages from its result. Undefined for a running run or
 * one whose result left its messages out (the fork's queries read those).
 */
async function closedStart(
  client: Client,
  id: string,
): Promise<{ recorded: Parameters<typeof forkInput>[1]; runId: string } | undefined> {
  const handle = client.workflow.getHandle(id);
  const d = await handle.describe();
  const run = await closedRecord(handle, d);
  const first = d.raw.workflowExecutionInfo?.firstRunId;
  if (!run || !first) return undefined;
  const page = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId: id, runId: first },
    maximumPageSize: 1,
  });
  const started = page.history?.events?.[0]?.workflowExecutionStartedEventAttributes;
  // an input offloaded to the payload store is a reference here: the fork's queries read that run
  const [start] = await decodeArrayFromPayloads(client.options.loadedDataConverter, started?.input?.payloads).catch(
    () => [undefined],
  );
  if (typeof (start as AgentRunInput | undefined)?.model !== 'string') return undefined;
  const { prompt: _prompt, messages = [], ...config } = start as AgentRunInput;
  return { recorded: { config, given: messages.length, transcript: [...messages, ...run.messages] }, runId: d.runId };
}

/** The batch options of a replay. */
export function replayBatchOptions(opts: ReplayOptions, count: number): StartBatchOptions {
  return {
    batchId: opts.batchId ?? `replay-${randomUUID().slice(0, 8)}`,
    summary: `replay of ${count} run(s)${opts.model ? ` with ${opts.model}` : ''}`,
    ...(opts.concurrency !== undefined ? { concurrency: opts.concurrency } : {}),
    ...(opts.budget ? { budget: opts.budget } : {}),
  };
}
