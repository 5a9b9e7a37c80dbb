/**
 * `agentBatchWorkflow`: many agent runs as child `agentWorkflow`s (ids `<batchId>-<index>`), at most `concurrency`
 * at a time. Durable like any workflow: a worker restart replays it and the running children carry on. A child's
 * failure is recorded, never fatal. Before its history grows large the batch stops launching, waits for its running
 * children, and continues-as-new carrying counters and one compact outcome per task (~20 bytes, so up to ~50,000
 * tasks per batch) — never the children's results, which stay readable from each child. Queries: `progress`, `results`.
 *
 * Tasks come inline, or — for lists too big for one payload — as a page reference: each page is held by an
 * `agentBatchWorkflow` execution started with `{ taskPage: [...] }` that hands out slices of it by signal.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  continueAsNew,
  executeChild,
  getExternalWorkflowHandle,
  isCancellation,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import { emptyUsage } from '../common/messages.js';
import { childRunOutcome } from './failure-outcomes.js';
import type { AgentRunInput, AgentRunResult, RunStatus } from '../common/run.js';
import {
  pageReleaseSignal,
  pageReplySignal,
  pageRequestSignal,
  progressQuery,
  resultsQuery,
  type AgentBatchInput,
  type AgentBatchResult,
  type BatchPageHolderInput,
  type BatchPageRef,
  type BatchPageRequest,
  type BatchProgress,
  type BatchTaskResult,
} from './batch-definitions.js';
import { BatchBudget, type BatchBudgetCarried } from './batch-budget.js';

const DEFAULT_CONCURRENCY = 8;
const DEFAULT_AFTER_EVENTS = 10_000;
const DEFAULT_AFTER_BYTES = 8 * 1024 * 1024;
const MAX_FAILURES_KEPT = 100;
/** Failed tasks whose error text the batch keeps in its compact outcomes (about 300 KB at most). */
const MAX_ERRORS_KEPT = 1000;
/** Tasks asked of a page holder at once, and the most bytes it sends in one reply. */
const PAGE_CHUNK = 64;
const PAGE_REPLY_MAX_CHARS = 512 * 1024;

const STATUS_CODES: RunStatus[] = ['completed', 'stopped', 'failed', 'cancelled'];

/** One finished task: [status code (index in STATUS_CODES), turns, tokens, cost, error?]. */
type CompactOutcome = [number, number, number, number] | [number, number, number, number, string];

/** What continues across continue-as-new: counters and the compact outcomes, not the tasks nor the results. */
export interface BatchCarried extends Omit<AgentBatchResult, 'total'>, BatchBudgetCarried {
  next: number;
  outcomes: (CompactOutcome | null)[];
}

export async function agentBatchWorkflow(
  input: AgentBatchInput | BatchPageHolderInput,
  carried?: BatchCarried,
): Promise<AgentBatchResult | { released: boolean }> {
  if (input && typeof input === 'object' && 'taskPage' in input) return holdPage(input);
  return runBatch(input as AgentBatchInput, carried);
}

function checkInput(input: AgentBatchInput): string[] {
  const errors: string[] = [];
  if (!input || typeof input !== 'object') return ['input: must be an object { tasks, concurrency?, taskQueue? }'];
  const t = input.tasks as unknown;
  if (!Array.isArray(t)) {
    const pages = (t as BatchPageRef | undefined)?.pages;
    if (
      !Array.isArray(pages) ||
      pages.some((p) => !p || typeof p.workflowId !== 'string' || !Number.isInteger(p.count) || p.count < 0)
    ) {
      errors.push('tasks: must be an array of AgentRunInput, or { pages: [{ workflowId, count }] }');
    }
  } else if (t.some((x) => !x || typeof x !== 'object' || Array.isArray(x))) {
    errors.push('tasks: every task must be an AgentRunInput object');
  }
  if (input.concurrency !== undefined && (!Number.isInteger(input.concurrency) || input.concurrency < 1))
    errors.push('concurrency: must be an integer >= 1');
  if (input.taskQueue !== undefined && (typeof input.taskQueue !== 'string' || !input.taskQueue))
    errors.push('taskQueue: must be a non-empty string');
  const budgetErrors = budgetFieldErrors(input.budget);
  errors.push(...budgetErrors);
  for (const k of ['continueAsNewAfterEvents', 'continueAsNewAfterBytes', 'continueAsNewAfterTasks'] as const) {
    const v = input[k];
    if (v !== undefined && (!Number.isInteger(v) || v < 1)) errors.push(`${k}: must be an integer >= 1`);
  }
  return errors;
}

/** `budget.maxTokens: must be an integer >= 1`, … (the batch checks its own input: it has no validation activity). */
function budgetFieldErrors(budget: unknown): string[] {
  if (budget === undefined) return [];
  if (!budget || typeof budget !== 'object' || Array.isArray(budget))
    return ['budget: must be an object { maxTokens?, maxCostUsd?, maxModelCalls? }'];
  const errors: string[] = [];
  const b = budget as Record<string, unknown>;
  for (const key of Object.keys(b))
    if (!['maxTokens', 'maxCostUsd', 'maxModelCalls'].includes(key)) errors.push(`budget.${key}: unknown field`);
  for (const k of ['maxTokens', 'maxModelCalls'])
    if (b[k] !== undefined && (!Number.isInteger(b[k]) || (b[k] as number) < 1))
      errors.push(`budget.${k}: must be an integer >= 1`);
  if (b.maxCostUsd !== undefined && (typeof b.maxCostUsd !== 'number' || !(b.maxCostUsd > 0)))
    errors.push('budget.maxCostUsd: must be a number > 0');
  return errors;
}

function summaryOf(task: AgentRunInput, index: number): string {
  const p = task.prompt;
  const text =
    typeof p === 'string'
      ? p
      : Array.isArray(p) && p.length
        ? typeof p[0] === 'string'
          ? p[0]
          : JSON.stringify(p[0]?.content ?? '')
        : '(continue)';
  const line = `#${index} ${text.split('\n', 1)[0]}`;
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

async function runBatch(input: AgentBatchInput, carried?: BatchCarried): Promise<AgentBatchResult> {
  const errors = checkInput(input);
  if (errors.length > 0) {
    throw ApplicationFailure.create({
      type: 'InvalidAgentBatchInput',
      message: `Invalid AgentBatchInput: ${errors.join('; ')}`,
      nonRetryable: true,
      details: [errors],
    });
  }
  const info = workflowInfo();
  const batchId = info.workflowId;
  const inline = Array.isArray(input.tasks) ? input.tasks : undefined;
  const pages = inline ? [] : (input.tasks as BatchPageRef).pages;
  const pageStarts: number[] = [];
  let total = inline?.length ?? 0;
  if (!inline) for (const p of pages) (pageStarts.push(total), (total += p.count));
  const concurrency = input.concurrency ?? DEFAULT_CONCURRENCY;
  const st: BatchCarried = carried ?? {
    next: 0,
    done: 0,
    failed: 0,
    byStatus: {},
    tokens: 0,
    cost: 0,
    continuedAsNew: 0,
    outcomes: [],
    failures: [],
  };
  const budget = new BatchBudget(input.budget, st);
  const running = new Set<number>();
  let draining = false;
  let finishedHere = 0;
  let startedHere = 0;

  const progress = (): BatchProgress => ({
    total,
    done: st.done,
    failed: st.failed,
    running: running.size,
    queued: total - st.next,
    tokens: st.tokens,
    cost: Math.round(st.cost * 1e6) / 1e6,
    continuedAsNew: st.continuedAsNew,
    concurrency,
    phase: st.done + st.failed >= total ? 'finished' : draining ? 'draining' : 'running',
    ...budget.progress(),
  });
  const publish = () => {
    const p = progress();
    setCurrentDetails(
      [
        `**${p.phase}** · ${p.done + p.failed}/${p.total} finished`,
        `done ${p.done} · failed ${p.failed} · running ${p.running} · queued ${p.queued}`,
        `usage: ${p.tokens} tokens · $${p.cost.toFixed(4)} · concurrency ${concurrency}${p.continuedAsNew ? ` · continued-as-new ${p.continuedAsNew}×` : ''}`,
        ...budget.details(),
        `children: \`${batchId}-<index>\``,
      ].join('\n\n'),
    );
  };

  setHandler(progressQuery, progress, {
    description: 'Batch progress: total, done, failed, running, queued, tokens, cost.',
  });
  setHandler(
    resultsQuery,
    (opts) => {
      const from = Math.max(0, opts?.from ?? 0);
      const end = Math.min(total, from + Math.max(1, opts?.limit ?? 1000));
      const results: BatchTaskResult[] = [];
      for (let i = from; i < end; i++) {
        const o = st.outcomes[i];
        const workflowId = `${batchId}-${i}`;
        if (o) {
          results.push({
            index: i,
            workflowId,
            status: STATUS_CODES[o[0]],
            turns: o[1],
            tokens: o[2],
            cost: o[3],
            ...(o[4] ? { error: o[4] } : {}),
          });
        } else results.push({ index: i, workflowId, status: running.has(i) ? 'running' : 'queued' });
      }
      return { results, total };
    },
    {
      description:
        'Compact per-task outcomes { from = 0, limit = 1000 } → { results: [{ index, workflowId, status, turns, tokens, cost, error? }], total }; full results are the children’s.',
    },
  );

  // --- tasks from page holders --------------------------------------------------------------------------------------
  const buffer = new Map<number, AgentRunInput>();
  let requestedUpTo = st.next;
  let lastRequestStart = -1;
  setHandler(pageReplySignal, (reply) => {
    const base = pageStarts[reply.page];
    if (base === undefined) return;
    reply.tasks.forEach((t, k) => {
      const i = base + reply.from + k;
      if (i >= st.next) buffer.set(i, t);
    });
    // a reply cut short (too many bytes) leaves the rest to be asked for again
    if (base + reply.from === lastRequestStart)
      requestedUpTo = Math.min(requestedUpTo, base + reply.from + reply.tasks.length);
  });
  const locate = (i: number): { page: number; offset: number } => {
    let p = pageStarts.length - 1;
    while (p > 0 && pageStarts[p] > i) p--;
    return { page: p, offset: i - pageStarts[p] };
  };
  /** Asks the holder of task `i`'s page for a chunk from `i`; false when the holder is gone. */
  const request = async (i: number): Promise<boolean> => {
    const { page, offset } = locate(i);
    const limit = Math.min(PAGE_CHUNK, pages[page].count - offset);
    const req: BatchPageRequest = { replyTo: batchId, page, from: offset, limit };
    requestedUpTo = Math.max(requestedUpTo, i + limit);
    lastRequestStart = i;
    try {
      await getExternalWorkflowHandle(pages[page].workflowId).signal(pageRequestSignal, req);
      return true;
    } catch (err) {
      if (isCancellation(err)) throw err;
      return false;
    }
  };
  const taskAt = async (i: number): Promise<AgentRunInput | undefined> => {
    if (inline) return inline[i];
    for (let attempt = 0; !buffer.has(i); attempt++) {
      if (attempt >= 5) return undefined;
      // ask unless a request covering i is on its way (a prefetch); after a minute without an answer ask again
      if ((attempt > 0 || requestedUpTo <= i) && !(await request(i))) return undefined;
      await condition(() => buffer.has(i), '1 minute');
    }
    const task = buffer.get(i)!;
    buffer.delete(i);
    // prefetch the next chunk before the buffer runs dry
    if (requestedUpTo < total && requestedUpTo - i <= concurrency) void request(requestedUpTo);
    return task;
  };

  // --- children -------------------------------------------------------------------------------------------------------
  const record = (i: number, result: AgentRunResult | undefined, err: unknown) => {
    const o = childRunOutcome(result, err);
    const code = STATUS_CODES.indexOf(o.status);
    // error texts only for the first failures, so the carried outcomes stay ~20 bytes a task (the child has the rest)
    const keepError = o.error && st.failed < MAX_ERRORS_KEPT;
    st.outcomes[i] = keepError ? [code, o.turns, o.tokens, o.cost, o.error!] : [code, o.turns, o.tokens, o.cost];
    st.byStatus[o.status] = (st.byStatus[o.status] ?? 0) + 1;
    if (o.status === 'completed' || o.status === 'stopped') st.done += 1;
    else {
      st.failed += 1;
      if (st.failures.length < MAX_FAILURES_KEPT)
        st.failures.push({
          index: i,
          workflowId: `${batchId}-${i}`,
          status: o.status,
          ...(o.error ? { error: o.error } : {}),
        });
    }
    st.tokens += o.tokens;
    st.cost += o.cost;
    finishedHere += 1;
    running.delete(i);
    budget.recorded(
      o.modelCalls ?? 0,
      [...running].map((k) => `${batchId}-${k}`),
    );
  };
  const launch = (i: number, task: AgentRunInput) => {
    running.add(i);
    executeChild<(input: AgentRunInput) => Promise<AgentRunResult>>('agentWorkflow', {
      workflowId: `${batchId}-${i}`,
      args: [budget.taskInput(task)],
      ...(input.taskQueue ? { taskQueue: input.taskQueue } : {}),
      staticSummary: summaryOf(task, i),
      staticDetails: `batch ${batchId} · task ${i} of ${total} · model ${task.model}`,
    })
      .then(
        (r) => record(i, r, undefined),
        (err) => record(i, undefined, err),
      )
      .finally(() => {
        running.delete(i);
        publish();
      });
  };
  const shouldContinueAsNew = (): boolean => {
    const now = workflowInfo();
    return (
      now.continueAsNewSuggested ||
      now.historyLength >= (input.continueAsNewAfterEvents ?? DEFAULT_AFTER_EVENTS) ||
      now.historySize >= (input.continueAsNewAfterBytes ?? DEFAULT_AFTER_BYTES) ||
      (input.continueAsNewAfterTasks !== undefined && startedHere >= input.continueAsNewAfterTasks)
    );
  };

  try {
    publish();
    for (;;) {
      while (!draining && running.size < concurrency && st.next < total) {
        const spent = budget.reached();
        if (spent) {
          // the pool is spent: the remaining tasks are not started
          const error = budget.text(spent);
          for (; st.next < total; st.next++) record(st.next, notStarted(error), undefined);
          break;
        }
        const i = st.next;
        const task = await taskAt(i);
        st.next = i + 1;
        if (task === undefined) {
          record(
            i,
            undefined,
            new Error(`task ${i} could not be read from its page holder ${pages[locate(i).page]?.workflowId}`),
          );
          continue;
        }
        launch(i, task);
        startedHere += 1;
        if (shouldContinueAsNew()) draining = true;
      }
      publish();
      if (st.next >= total && running.size === 0) break;
      if (draining && running.size === 0) {
        st.continuedAsNew += 1;
        return await continueAsNew<typeof agentBatchWorkflow>(input, st);
      }
      const seen = finishedHere;
      await condition(() => finishedHere !== seen);
      if (!draining && st.next < total && shouldContinueAsNew()) draining = true;
    }
  } finally {
    if (st.done + st.failed >= total || CancellationScope.current().consideredCancelled) {
      await CancellationScope.nonCancellable(async () => {
        for (const p of pages)
          await getExternalWorkflowHandle(p.workflowId)
            .signal(pageReleaseSignal)
            .catch(() => undefined);
      });
    }
  }
  publish();
  return {
    total,
    done: st.done,
    failed: st.failed,
    byStatus: st.byStatus,
    tokens: st.tokens,
    cost: Math.round(st.cost * 1e6) / 1e6,
    continuedAsNew: st.continuedAsNew,
    failures: st.failures,
  };
}

/** The outcome recorded for a task the spent batch budget did not start. */
function notStarted(error: string): AgentRunResult {
  return { status: 'stopped', finalText: '', newMessages: [], usage: emptyUsage(), turns: 0, error };
}

/** A page holder: answers `pageRequest` signals with slices of its page until released (or idle for long). */
async function holdPage(input: BatchPageHolderInput): Promise<{ released: boolean }> {
  const requests: BatchPageRequest[] = [];
  let released = false;
  setHandler(pageRequestSignal, (r) => void requests.push(r), {
    description: 'Send tasks [from, from + limit) of this page to replyTo.',
  });
  setHandler(pageReleaseSignal, () => void (released = true), { description: 'The batch is finished: complete.' });
  setCurrentDetails(`**task page** · ${input.taskPage.length} tasks`);
  for (;;) {
    const woke = await condition(() => requests.length > 0 || released, input.idleTimeout ?? '30 days');
    if (!woke) return { released: false };
    while (requests.length > 0) {
      const r = requests.shift()!;
      const tasks: AgentRunInput[] = [];
      let chars = 0;
      for (let i = r.from; i < Math.min(input.taskPage.length, r.from + r.limit); i++) {
        chars += JSON.stringify(input.taskPage[i]).length;
        if (tasks.length > 0 && chars > PAGE_REPLY_MAX_CHARS) break;
        tasks.push(input.taskPage[i]);
      }
      await getExternalWorkflowHandle(r.replyTo)
        .signal(pageReplySignal, { page: r.page, from: r.from, tasks })
        .catch(() => undefined);
    }
    if (released) return { released: true };
    const info = workflowInfo();
    if (info.continueAsNewSuggested || info.historySize > 16 * 1024 * 1024)
      return await continueAsNew<typeof agentBatchWorkflow>(input);
  }
}
