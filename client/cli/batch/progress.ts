/** What `keel batch` shows while it follows a batch (a bar on a TTY, plain lines otherwise) and `keel status <batch>`. */
import type { AgentBatchResult, BatchProgress } from '../../../common/batch-definitions.js';
import { BATCH_WORKFLOW_TYPE } from '../../../common/batch-definitions.js';
import type { AgentClient } from '../../agent-client.js';
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
  const progress = status === 'running' ? await batchProgress(handle) : undefined;
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
    if (progress) lines.push(progressLine(progress, { ...sink, color: false }));
    if (summary)
      lines.push(
        `${summary.done}/${summary.total} done · ${summary.failed} failed · ${formatTokens(summary.tokens)} tokens · ${formatCost(summary.cost)} · continued-as-new ${summary.continuedAsNew}×`,
      );
    lines.push(...extra.lines, `Temporal UI: ${url}`);
    sink.write(`${lines.join('\n')}\n`);
  }
  if (status === 'running') return EXIT.ok;
  return summary && summary.failed === 0 ? EXIT.ok : EXIT.runFailed;
}
