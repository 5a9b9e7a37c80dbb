/**
 * `keel limits`: the provider limits of the task queue's runs (docs/provider-limits.md) — each key's limiter workflow,
 * found by visibility, with its limits, what is in use and the waiting runs by priority (its `keelLimitsState` query).
 */
import type { Command } from 'commander';
import type { LimiterSnapshot } from '../../common/limits/ledger.js';
import { LIMITER_WORKFLOW_TYPE, LIMITS_STATE_QUERY } from '../../common/limits/protocol.js';
import { act, globals, printJson, withClient } from '../context.js';
import { limiterUse, thousands as n } from '../../common/limits/use-text.js';

/** The visibility query of `keel limits`: the task queue's running limiters. */
export function limitsQuery(taskQueue: string): string {
  return `TaskQueue = "${taskQueue.replaceAll('"', '\\"')}" AND WorkflowType = "${LIMITER_WORKFLOW_TYPE}" AND ExecutionStatus = "Running"`;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** One key as `keel limits` prints it: limits, use, the line by priority and its recent median waits. */
export function limiterText(s: LimiterSnapshot): string {
  const lines = [`${s.key}  ${s.spec}`, `  in use: ${limiterUse(s)}`];
  if (s.pausedForMs !== undefined)
    lines.push(`  the provider asked to retry after ${Math.ceil(s.pausedForMs / 1000)} s`);
  for (const w of s.waiting)
    lines.push(
      `  waiting, priority ${w.priority}: ${w.count} (oldest ${Math.round(w.oldestMs / 1000)} s): ${w.workflowIds.join(', ')}${w.count > w.workflowIds.length ? ', …' : ''}`,
    );
  if (s.waiting.length === 0) lines.push('  waiting: none');
  const priorities = [...new Set(s.recentWaits.map((w) => w.priority))].sort();
  if (priorities.length)
    lines.push(
      `  recent median wait: ${priorities.map((p) => `priority ${p} ${n(median(s.recentWaits.filter((w) => w.priority === p).map((w) => w.ms)))} ms`).join(' · ')}`,
    );
  lines.push(`  granted ${n(s.totals.granted)} · retry-after ${s.totals.backoffs}`);
  return lines.join('\n');
}

export function register(program: Command): void {
  program
    .command('limits')
    .summary("the provider limits of the task queue's runs: use and waiting runs by priority")
    .description(
      'Lists the provider limits of the runs on --task-queue (docs/provider-limits.md): for each provider key its limits, ' +
        'what the last minute used and what is in flight, the runs waiting by priority and their recent median wait. ' +
        'Limits are given to workers (--provider-limit on keel worker / keel dev, or $KEEL_PROVIDER_LIMITS).',
    )
    .action(
      act(async (_o: unknown, cmd: Command) => {
        const g = globals(cmd);
        const query = limitsQuery(g.taskQueue);
        return withClient(g, async (client) => {
          const keys: LimiterSnapshot[] = [];
          for await (const w of client.client.workflow.list({ query }))
            keys.push(await client.client.workflow.getHandle(w.workflowId).query<LimiterSnapshot>(LIMITS_STATE_QUERY));
          if (g.json) return printJson({ query, limits: keys });
          process.stdout.write(
            keys.length === 0
              ? `No provider limits on task queue ${g.taskQueue} (no limiter has run: give workers --provider-limit).\n`
              : `${keys.map(limiterText).join('\n\n')}\n`,
          );
        });
      }),
    );
}
