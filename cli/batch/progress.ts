/** What `keel batch` shows while it follows a batch (a bar on a TTY, plain lines otherwise) and `keel status <batch>`. */
import { batchCacheText } from '../../common/cache-usage.js';
import type { AgentBatchResult, BatchProgress } from '../../common/batch-definitions.js';
import { BATCH_WORKFLOW_TYPE } from '../../common/batch-definitions.js';
import type { AgentClient } from '../../client/agent-client.js';
import { EXIT, printJson, uiLink, type GlobalOptions } from '../context.js';
import { temporalStatus } from '../outcome.js';
import { formatCost, formatTokens, progressLine, stdoutSink, type Sink } from '../render.js';
import { batchProgress } from './start.js';

/**
 * Prints progress updates. The rate counts only tasks that finished while this command followed the batch (so an
 * `--attach` to a batch that is half done reports its current pace, not everything finished before); the concurrency
 * is the batch's own, from its `progress` query.
 */
export function progressPrinter(sink: Sink) {
  let lastPlain = 0;
  let lastText = '';
  const began = Date.now();
  let baseline: number | undefined;
  const rateOf = (p: BatchProgress): number | undefined => {
    const finished = p.done + p.failed;
    baseline ??= finished;
    const minutes = (Date.now() - began) / 60_000;
    return minutes > 0.02 ? (finished - baseline) / minutes : undefined;
  };
  return {
    update(p: BatchProgress, final = false) {
      const rate = rateOf(p);
      if (sink.tty) {
        sink.write(`\r${progressLine(p, sink, rate)}\u001b[K${final ? '\n' : ''}`);
        return;
      }
      const text =
        `progress total=${p.total} done=${p.done} failed=${p.failed} running=${p.running} queued=${p.queued} ` +
        `concurrency=${p.concurrency} tokens=${p.tokens} cost=${p.cost.toFixed(6)}` +
        (p.budget
          ? ` budget=${p.budget.lines.map((l) => `${l.kind.replace(' ', '_')}:${l.used}/${l.limit}`).join(',')}` +
            (p.budget.spent ? ' budget_spent=true' : '')
          : '');
      if (final || (text !== lastText && Date.now() - lastPlain >= 2000)) {
        sink.write(`${text}${rate !== undefined ? ` rate=${rate.toFixed(0)}/min` : ''}\n`);
        lastPlain = Date.now();
        lastText = text;
      }
    },
    /** Tasks per minute finished while following, or undefined before any time has passed. */
    rate: rateOf,
    began,
  };
}

/** What a closed batch's tasks came to: done (completed, stopped), failed (failed, cancelled), never started, running. */
export interface OutcomeCounts {
  total: number;
  done: number;
  failed: number;
  neverStarted: number;
  running: number;
}

/** The counts of a list of outcomes (`queued` in a closed batch: never started). */
export function outcomeCounts(outcomes: readonly { status: string }[]): OutcomeCounts {
  const c: OutcomeCounts = { total: outcomes.length, done: 0, failed: 0, neverStarted: 0, running: 0 };
  for (const { status } of outcomes)
    if (status === 'completed' || status === 'stopped') c.done += 1;
    else if (status === 'failed' || status === 'cancelled') c.failed += 1;
    else if (status === 'queued') c.neverStarted += 1;
    else c.running += 1;
  return c;
}

/** `4/6 done · 0 failed · 2 never started` (never started and still running only when there are any). */
export function countsText(c: OutcomeCounts): string {
  return (
    `${c.done}/${c.total} done · ${c.failed} failed` +
    (c.neverStarted ? ` · ${c.neverStarted} never started` : '') +
    (c.running ? ` · ${c.running} still running` : '')
  );
}

/**
 * `First failure (keel-batch-…-0): <error>` of a batch that has failures — the one of lowest index the batch kept (it
 * keeps its first 100) — its error text on one line, cut at 300 characters; undefined when none failed. Every failed
 * task's error is in its result line.
 */
export function firstFailure(summary: Pick<AgentBatchResult, 'failed' | 'failures'>): string | undefined {
  if (!summary.failed || summary.failures.length === 0) return undefined;
  const f = summary.failures.reduce((a, b) => (b.index < a.index ? b : a));
  const error = (f.error ?? f.status).replace(/\s+/g, ' ').trim();
  return `First failure (${f.workflowId}): ${error.length > 300 ? `${error.slice(0, 299)}…` : error}`;
}

/** The counts of a batch's `progress` (of a closed batch: its queued tasks never started). */
export const progressCounts = (p: BatchProgress): OutcomeCounts => ({
  total: p.total,
  done: p.done,
  failed: p.failed,
  neverStarted: p.queued,
  running: p.running,
});

/** `keel status <batch>` and `keel batch describe`: state, progress or summary, link; `extra` adds fields and lines (e.g. retries). */
export async function printBatchStatus(
  client: AgentClient,
  g: GlobalOptions,
  id: string,
  extra: { json: Record<string, unknown>; lines: string[] } = { json: {}, lines: [] },
): Promise<number> {
  const handle = client.client.workflow.getHandle(id);
  const d = await handle.describe();
  const status = temporalStatus(d);
  let summary: AgentBatchResult | undefined;
  if (status === 'completed') summary = (await handle.result()) as AgentBatchResult;
  // a batch closed otherwise (cancelled, terminated) has no result: its progress query still counts its tasks
  const progress = summary ? undefined : await batchProgress(handle);
  const url = uiLink(g, id);
  if (g.json)
    printJson({
      workflowId: id,
      workflowType: BATCH_WORKFLOW_TYPE,
      temporalStatus: status,
      url,
      ...(progress ? { progress } : {}),
      ...(summary ? { result: summary } : {}),
      ...extra.json,
    });
  else {
    const sink = stdoutSink();
    const lines = [`${id}  batch ${status}`];
    if (progress && status === 'running') lines.push(progressLine(progress, { ...sink, color: false }));
    else if (progress)
      lines.push(
        `${countsText(progressCounts(progress))} · ${formatTokens(progress.tokens)} tokens · ${formatCost(progress.cost)}`,
      );
    if (summary)
      lines.push(
        `${summary.done}/${summary.total} done · ${summary.failed} failed · ${formatTokens(summary.tokens)} tokens${batchCacheText(summary)} · ${formatCost(summary.cost)} · continued-as-new ${summary.continuedAsNew}×`,
      );
    const first = summary && firstFailure(summary);
    if (first) lines.push(first);
    lines.push(...extra.lines, `Temporal UI: ${url}`);
    sink.write(`${lines.join('\n')}\n`);
  }
  if (status === 'running') return EXIT.ok;
  return summary && summary.failed === 0 ? EXIT.ok : EXIT.runFailed;
}
