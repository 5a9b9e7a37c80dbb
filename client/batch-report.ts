/**
 * The summary of a graded batch or one with variants (README "Graded batches"), as `keel batch --grade` prints it:
 * one row per variant (or one for the batch) with pass rate, pass@k, mean score, cost, cost per pass, turns and the
 * mean duration of its runs (read from the children's start and close times), then the tasks where variants disagree.
 */
import type { Client } from '@temporalio/client';
import type { AgentBatchResult } from '../common/batch-definitions.js';
import { slotChildId, slotOf, type BatchShape, type GradingSummary } from '../common/grading.js';

/** One row of the grade table. */
export interface GradeRow {
  variant: string;
  runs: number;
  done: number;
  failed: number;
  cost: number;
  turns: number;
  /** Mean wall time of this row's runs (ms), from the children's start and close times. */
  meanDurationMs: number | null;
  grading?: GradingSummary;
}

/** Mean run duration per variant index (0 without variants), from the children's describe (16 at a time). */
export async function variantDurations(
  client: Client,
  batchId: string,
  shape: BatchShape,
  total: number,
): Promise<(number | null)[]> {
  const sums: number[] = [];
  const counts: number[] = [];
  for (let from = 0; from < total; from += 16) {
    await Promise.all(
      Array.from({ length: Math.min(16, total - from) }, async (_, k) => {
        const s = from + k;
        const d = await client.workflow
          .getHandle(slotChildId(batchId, shape, s))
          .describe()
          .catch(() => undefined);
        if (!d?.closeTime) return;
        const v = slotOf(shape, s).variant ?? 0;
        sums[v] = (sums[v] ?? 0) + (d.closeTime.getTime() - d.startTime.getTime());
        counts[v] = (counts[v] ?? 0) + 1;
      }),
    );
  }
  const n = Math.max(1, shape.variants?.length ?? 0);
  return Array.from({ length: n }, (_, v) => (counts[v] ? Math.round(sums[v] / counts[v]) : null));
}

/** The rows of a finished batch's grade table (`durations` by variant index). */
export function gradeRows(result: AgentBatchResult, durations: (number | null)[] = []): GradeRow[] {
  if (result.variants?.length)
    return result.variants.map((v, i) => ({
      variant: v.name,
      runs: v.runs,
      done: v.done,
      failed: v.failed,
      cost: v.cost,
      turns: v.turns,
      meanDurationMs: durations[i] ?? null,
      ...(v.grading ? { grading: v.grading } : {}),
    }));
  return [
    {
      variant: '—',
      runs: result.total,
      done: result.done,
      failed: result.failed,
      cost: result.cost,
      turns: 0,
      meanDurationMs: durations[0] ?? null,
      ...(result.grading ? { grading: result.grading } : {}),
    },
  ];
}

const pct = (r: number) => `${(r * 100).toFixed(1)}%`;
const usd = (n: number | null) => (n === null ? '—' : `$${n.toFixed(4)}`);
const secs = (ms: number | null) => (ms === null ? '—' : `${(ms / 1000).toFixed(1)}s`);

/** The table as text lines (aligned columns), then grading errors and disagreements. */
export function formatGradeTable(result: AgentBatchResult, rows: GradeRow[]): string[] {
  const k = result.grading?.passAtK.k ?? 1;
  const head = [
    'variant',
    'runs',
    'passed',
    'pass rate',
    `pass@${k}`,
    'mean score',
    'cost',
    'cost/pass',
    'turns',
    'duration',
  ];
  const body = rows.map((r) => {
    const g = r.grading;
    return [
      r.variant,
      String(r.runs),
      g ? `${g.passed}/${g.graded}` : '—',
      g ? pct(g.passRate) : '—',
      g ? `${g.passAtK.passed}/${g.passAtK.tasks} ${pct(g.passAtK.rate)}` : '—',
      g ? g.meanScore.toFixed(3) : '—',
      usd(r.cost),
      usd(g ? g.costPerPass : null),
      rows.length > 1 || result.variants?.length ? String(r.turns) : '—',
      secs(r.meanDurationMs),
    ];
  });
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((row) => row[c].length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c])))
      .join('  ')
      .trimEnd();
  const out = [line(head), ...body.map(line)];
  if (result.grading?.errors) out.push(`grading errors: ${result.grading.errors} (recorded, not task failures)`);
  if (result.disagreements) out.push(agreementLine(result, rows));
  return out;
}

/**
 * Whether the variants agree: the tasks they disagree on, or that they agree — never said of variants of which no run
 * passed (they "agree" only in failing: `no run of any variant passed`).
 */
function agreementLine(result: AgentBatchResult, rows: GradeRow[]): string {
  if (result.disagreements?.length) return `variants disagree on tasks: ${result.disagreements.join(', ')}`;
  const passed = rows.some((r) => (r.grading ? r.grading.passed > 0 : r.done > 0));
  return passed ? 'variants agree on every task' : 'no run of any variant passed: nothing to compare';
}
