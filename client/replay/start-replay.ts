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
import type { GraderDefinition } from '../../node-common/graders.js';
import type { BatchShape, GradedTaskFields, GradingSummary, VariantSummary } from '../../common/grading.js';
import type { LiveTools } from '../../common/replay.js';
import type { AgentRunInput } from '../../common/run.js';
import type { AgentBatchHandle, StartBatchOptions } from '../batch-client.js';
import { batchInputOf, batchOutcomes } from '../batch-retry.js';
import { decodeArrayFromPayloads } from '@temporalio/common/lib/internal-non-workflow/index.js';
import { forkInput, planFork } from '../fork/plan-fork.js';
import { compareRuns, type RunReplayReport } from './run-report.js';
import { closedRecord, readRecordedRun, type RecordedRun } from './recorded-run.js';
import { replayGrading, shaped, type ReplayGradingPlan } from './replay-grading.js';

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
  /**
   * Grade every replay so (default: a batch's tasks keep their own `expected` / `grader`); the originals are then graded
   * with the same grader on this client ("graded old"): a built-in, or one of `graders`.
   */
  grade?: GradedTaskFields;
  /** Graders (`defineGrader`) this client grades the originals with when `grade` names one that is not a built-in. */
  graders?: GraderDefinition[];
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
  /**
   * The graders' summaries, old and new: old is the originals' batch's own (when it was graded), or with `grade` the
   * originals graded here with that grader; a batch with variants or repeats keeps its shape on both sides (pass@k).
   */
  grading?: { old?: GradingSummary; new?: GradingSummary };
  /** With variants: a line per variant, old and new. */
  variants?: { old?: VariantSummary[]; new?: VariantSummary[] };
  /** Why "graded old" is empty though the replay is graded (a grader this client does not have). */
  oldNotGraded?: string;
}

/** A replay under way: its batch and the originals, task `i` replaying `originals[i]`. */
export class ReplayHandle {
  constructor(
    readonly batch: AgentBatchHandle,
    readonly originals: string[],
    private readonly client: Client,
    private readonly plan: ReplayGradingPlan,
  ) {}

  /** Task `i`'s replay against its original `id`, and the original as read. */
  private async compare(id: string, i: number): Promise<{ report: RunReplayReport; original: RecordedRun }> {
    const [before, after] = await Promise.all([
      readRecordedRun(this.client.workflow.getHandle(id)),
      readRecordedRun(this.client.workflow.getHandle(`${this.batch.workflowId}-${i}`)),
    ]);
    return { report: compareRuns(before, after), original: before };
  }

  /** Waits for every replay to finish, then compares each with its original. */
  async report(): Promise<ReplayReport> {
    const result: AgentBatchResult = await this.batch.result();
    const read: { report: RunReplayReport; original: RecordedRun }[] = [];
    // a few runs at a time: each read is three queries, which a worker answers by replaying the run
    for (let from = 0; from < this.originals.length; from += READ_AT_ONCE)
      read.push(
        ...(await Promise.all(
          this.originals.slice(from, from + READ_AT_ONCE).map((id, k) => this.compare(id, from + k)),
        )),
      );
    const runs = read.map((r) => r.report);
    const replays = shaped(this.plan.shape) ? await batchOutcomes(this.batch.workflow) : [];
    const graded = await replayGrading(
      this.plan,
      read.map((r) => r.original),
      replays,
      result,
    );
    const sum = (f: (r: RunReplayReport) => number) => runs.reduce((n, r) => n + f(r), 0);
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
      ...graded,
    };
  }
}

/** Runs whose record and replay a report reads at once. */
const READ_AT_ONCE = 8;

/**
 * The originals of `source` in order, the grading fields of each (a batch's tasks'), and a batch's shape (variants,
 * repeats) and own summaries.
 */
export async function originalsOf(
  client: Client,
  source: ReplaySource,
): Promise<{
  ids: string[];
  graded: (GradedTaskFields | undefined)[];
  shape: BatchShape;
  old?: { grading?: GradingSummary; variants?: VariantSummary[] };
}> {
  if ('runs' in source) return { ids: source.runs, graded: source.runs.map(() => undefined), shape: {} };
  if ('query' in source) {
    const ids: string[] = [];
    for await (const w of client.workflow.list({ query: source.query }))
      if (w.type === 'agentWorkflow') ids.push(w.workflowId);
    return { ids: ids.reverse(), graded: ids.map(() => undefined), shape: {} };
  }
  const handle = client.workflow.getHandle(source.batch);
  const [outcomes, { input, tasks }, result] = await Promise.all([
    batchOutcomes(handle),
    batchInputOf(client, source.batch),
    handle.result() as Promise<AgentBatchResult>,
  ]);
  const gradedOf = (t: AgentRunInput & GradedTaskFields) =>
    t.expected !== undefined || t.grader !== undefined
      ? { ...(t.expected !== undefined ? { expected: t.expected } : {}), ...(t.grader ? { grader: t.grader } : {}) }
      : undefined;
  const old = {
    ...(result.grading ? { grading: result.grading } : {}),
    ...(result.variants ? { variants: result.variants } : {}),
  };
  return {
    ids: outcomes.map((r) => r.workflowId),
    graded: outcomes.map((r) => gradedOf(tasks[r.task ?? r.index] as AgentRunInput & GradedTaskFields)),
    shape: {
      ...(input.variants?.length ? { variants: input.variants } : {}),
      ...(input.repeat !== undefined ? { repeat: input.repeat } : {}),
    },
    ...(result.grading || result.variants ? { old } : {}),
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
