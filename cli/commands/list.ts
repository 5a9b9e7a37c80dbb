/**
 * `keel list [--status <status>] [--batch <id>] [--limit <n>]`: the runs on the task queue, newest first, from Temporal
 * visibility. Top-level only: a batch's children (child workflows: Temporal's built-in `ParentWorkflowId` is the
 * batch's id) and its page holders are left out, and `--batch <id>` lists the children of one batch instead.
 */
import { Option, type Command } from 'commander';
import type { WorkflowExecutionInfo } from '@temporalio/client';
import { KEEL_COST_USD, KEEL_MODEL, KEEL_STATUS, KEEL_TURNS } from '../../common/search-attributes.js';
import { AGENT_WORKFLOW_TYPE } from '../../client/agent-client.js';
import { BATCH_WORKFLOW_TYPE } from '../../common/batch-definitions.js';
import { act, globals, intOption, printJson, uiLink, usageError, withClient } from '../context.js';
import { formatCost } from '../render.js';
import { forkMemoOf, forksQuery } from '../../client/fork/fork-links.js';
import { forkLine } from '../../common/fork.js';

/** The values of `--status`: KeelStatus as the workflow publishes it. */
export const LIST_STATUSES = [
  'running',
  'awaiting-approval',
  'waiting',
  'completed',
  'stopped',
  'cancelled',
  'failed',
] as const;

/** The visibility query of `keel list` (a `temporal workflow list --query` takes it as is). */
export function listQuery(o: { taskQueue: string; status?: string; batch?: string; forksOf?: string }): string {
  const q = [`TaskQueue = ${quoted(o.taskQueue)}`];
  if (o.batch !== undefined) q.push(`ParentWorkflowId = ${quoted(o.batch)}`);
  else if (o.forksOf !== undefined) q.push(forksQuery(o.forksOf));
  else
    q.push(
      `WorkflowType IN (${quoted(AGENT_WORKFLOW_TYPE)}, ${quoted(BATCH_WORKFLOW_TYPE)})`,
      'ParentWorkflowId IS NULL',
    );
  if (o.status !== undefined) q.push(`KeelStatus = ${quoted(o.status)}`);
  return q.join(' AND ');
}

function quoted(s: string): string {
  return `"${s.replaceAll('\\', '\\\\').replaceAll('"', '\\"')}"`;
}

export interface ListedRun {
  workflowId: string;
  type: 'run' | 'batch';
  /** KeelStatus; for a batch (or a run that never published one) Temporal's status, lower case. */
  status: string;
  model?: string;
  turns?: number;
  costUsd?: number;
  startTime: string;
  url: string;
  /** A fork: `forked from <id> at turn N` (or `rewound to turn N of run <runId>`). */
  forkedFrom?: string;
}

function listed(w: WorkflowExecutionInfo, url: string): ListedRun {
  const sa = w.typedSearchAttributes;
  const fork = forkMemoOf(w.memo);
  return {
    workflowId: w.workflowId,
    type: w.type === BATCH_WORKFLOW_TYPE ? 'batch' : 'run',
    status: sa.get(KEEL_STATUS) ?? w.status.name.toLowerCase().replace('_', ' '),
    ...(sa.get(KEEL_MODEL) !== undefined ? { model: sa.get(KEEL_MODEL) } : {}),
    ...(sa.get(KEEL_TURNS) !== undefined ? { turns: sa.get(KEEL_TURNS) } : {}),
    ...(sa.get(KEEL_COST_USD) !== undefined ? { costUsd: sa.get(KEEL_COST_USD) } : {}),
    startTime: w.startTime.toISOString(),
    url,
    ...(fork ? { forkedFrom: forkLine(fork) } : {}),
  };
}

/**
 * Columns padded to their widest value: id, kind, status, model, turns, cost, start (UTC, to the second), and the
 * branch (`forked from <id> at turn N`) when a listed run is a fork.
 */
function table(runs: ListedRun[]): string {
  const branches = runs.some((r) => r.forkedFrom !== undefined);
  const rows = [
    ['WORKFLOW ID', 'KIND', 'STATUS', 'MODEL', 'TURNS', 'COST', 'STARTED (UTC)', ...(branches ? ['BRANCH'] : [])],
    ...runs.map((r) => [
      r.workflowId,
      r.type,
      r.status,
      r.model ?? '-',
      r.turns !== undefined ? String(r.turns) : '-',
      r.costUsd !== undefined ? formatCost(r.costUsd) : '-',
      r.startTime.slice(0, 19).replace('T', ' '),
      ...(branches ? [r.forkedFrom ?? '-'] : []),
    ]),
  ];
  const widths = rows[0].map((_, i) => Math.max(...rows.map((row) => row[i].length)));
  return rows.map((row) => row.map((c, i) => (i === row.length - 1 ? c : c.padEnd(widths[i]))).join('  ')).join('\n');
}

interface ListFlags {
  status?: string;
  batch?: string;
  forksOf?: string;
  limit: number;
}

export function register(program: Command): void {
  program
    .command('list')
    .summary('the runs and batches on the task queue, newest first (a batch’s children with --batch)')
    .description(
      'Lists the agent runs and batches on --task-queue from Temporal visibility, newest first: workflow id, kind, status ' +
        '(KeelStatus), model, turns, cost and start time, and the branch of a fork (`forked from <id> at turn N`). The ' +
        'children of batches are left out (Temporal’s ParentWorkflowId is set on them); --batch <id> lists the children ' +
        'of that batch instead, --forks-of <id> the forks of that run (KeelForkedFrom). Prints the visibility query it ' +
        'ran, which `temporal workflow list --query` and the Web UI’s search box take as is.',
    )
    .addOption(new Option('--status <status>', 'only runs with this KeelStatus').choices([...LIST_STATUSES]))
    .option('--batch <batchId>', "the batch's children (its agent runs) instead of the top-level runs")
    .option('--forks-of <workflowId>', 'the forks of this run (keel fork), instead of the top-level runs')
    .option('--limit <n>', 'at most this many', intOption('--limit'), 50)
    .action(act(listRuns));
}

/** `keel list`'s action. */
async function listRuns(o: ListFlags, cmd: Command): Promise<void> {
  const g = globals(cmd);
  if (o.batch !== undefined && o.forksOf !== undefined) throw usageError('Give --batch or --forks-of, not both.');
  const query = listQuery({ taskQueue: g.taskQueue, status: o.status, batch: o.batch, forksOf: o.forksOf });
  return withClient(g, async (client) => {
    const runs: ListedRun[] = [];
    for await (const w of client.client.workflow.list({ query, pageSize: Math.min(o.limit, 1000) })) {
      runs.push(listed(w, uiLink(g, w.workflowId)));
      if (runs.length >= o.limit) break;
    }
    if (g.json) return printJson({ query, runs });
    const none =
      o.batch !== undefined
        ? `No runs of batch ${o.batch}`
        : o.forksOf !== undefined
          ? `No forks of ${o.forksOf}`
          : 'No runs';
    process.stdout.write(
      `${runs.length === 0 ? `${none} on task queue ${g.taskQueue}${o.status ? ` with status ${o.status}` : ''}.` : table(runs)}\n` +
        `query: ${query}\n`,
    );
  });
}
