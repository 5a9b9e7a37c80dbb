/**
 * `keel replay <runId | batchId | --query …> [--model …] [--system @file] [--grade …] [--live-tools …]` (issue 37
 * item 3; docs/runs.md#counterfactual-replay): recorded runs run again as a batch, tool calls served from the record;
 * prints a line per run (same answer or not, the first diverging turn, tools, tokens and cost old → new), the graded
 * summaries old and new, and the commands to compare a run with its replay.
 */
import { readFileSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import { BATCH_WORKFLOW_TYPE } from '../../common/batch-definitions.js';
import type { GradedTaskFields, GradingSummary, VariantSummary } from '../../common/grading.js';
import { LIVE_TOOLS, type LiveTools } from '../../common/replay.js';
import type { ReplayReport, ReplaySource } from '../../client/replay/start-replay.js';
import type { RunReplayReport } from '../../client/replay/run-report.js';
import { act, EXIT, globals, intOption, printJson, usageError, withClient } from '../context.js';
import { pasteable } from './batch.js';

interface ReplayFlags {
  query?: string;
  model?: string;
  system?: string;
  grade?: string;
  expected?: string;
  liveTools: string;
  id?: string;
  concurrency?: number;
}

export function register(program: Command): void {
  program
    .command('replay [id]')
    .summary('run recorded runs again with another model or prompt, tool results served from the record')
    .description(
      'Replays the run <id>, each run of the batch <id>, or the runs --query finds, as a new batch: each run starts ' +
        'again from its input with --model / --system; a tool call matching a recorded one (same tool and arguments at ' +
        'the same turn and position, or earlier) gets the recorded result without running; another gets a "not in the ' +
        'record" result, or runs for real by --live-tools. Prints a line per run and the graded summaries old and new.',
    )
    .option('--query <visibility query>', 'replay the runs this query finds (e.g. "ExecutionStatus = \'Completed\'")')
    .option('-m, --model <provider/model>', 'the model to replay with (default each run’s own)')
    .option('-s, --system <prompt>', 'the system prompt to replay with; @file reads it from a file')
    .option(
      '--grade <grader>',
      'grade every replay, and its original (graded old), with this grader (exact, includes, regex, json-schema, tool-called; a worker’s own grades the replays only)',
    )
    .option('--expected <value>', 'what --grade compares with: text, or a JSON object or list')
    .option(
      '--live-tools <mode>',
      'a call not in the record: none (answer "not in the record"), idempotent, all',
      'none',
    )
    .option('--id <batchId>', 'the replay batch’s id (default replay-<8 hex>)')
    .option('--concurrency <n>', 'replays running at a time', intOption('--concurrency'))
    .action(act((id: string | undefined, o: ReplayFlags, cmd: Command) => replay(cmd, id, o)));
}

async function replay(cmd: Command, id: string | undefined, o: ReplayFlags): Promise<number> {
  const g = globals(cmd);
  if (!LIVE_TOOLS.includes(o.liveTools as LiveTools))
    throw usageError(`--live-tools ${o.liveTools}: give none, idempotent or all`);
  if ((id === undefined) === (o.query === undefined)) throw usageError('replay: give a run or batch id, or --query');
  return withClient(g, async (client) => {
    const source = await sourceOf(client.client, id, o.query);
    const handle = await client.replay(source, {
      ...(o.model !== undefined ? { model: o.model } : {}),
      ...(o.system !== undefined ? { system: textOrFile(o.system) } : {}),
      ...(grading(o) ? { grade: grading(o) } : {}),
      liveTools: o.liveTools as LiveTools,
      ...(o.id !== undefined ? { batchId: o.id } : {}),
      ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
    });
    if (!g.json)
      process.stdout.write(`replaying ${handle.originals.length} run(s) as batch ${handle.batch.workflowId}\n`);
    const report = await handle.report();
    if (g.json) printJson(report);
    else process.stdout.write(render(cmd, report).join('\n') + '\n');
    return EXIT.ok;
  });
}

/** A batch's id (its workflow type says so) or a run's. */
async function sourceOf(client: Client, id: string | undefined, query: string | undefined): Promise<ReplaySource> {
  if (id === undefined) return { query: query! };
  const d = await client.workflow.getHandle(id).describe();
  return d.type === BATCH_WORKFLOW_TYPE ? { batch: id } : { runs: [id] };
}

function textOrFile(v: string): string {
  return v.startsWith('@') ? readFileSync(v.slice(1), 'utf8') : v;
}

function grading(o: ReplayFlags): GradedTaskFields | undefined {
  if (o.grade === undefined && o.expected === undefined) return undefined;
  // a JSON object or list (a json-schema grader's schema, texts for includes), else the text as given
  const expected: unknown =
    o.expected !== undefined && /^\s*[[{]/.test(o.expected) ? JSON.parse(o.expected) : o.expected;
  return { ...(o.grade ? { grader: o.grade } : {}), ...(expected !== undefined ? { expected } : {}) };
}

const money = (n: number) => `$${n.toFixed(4)}`;

function runLine(r: RunReplayReport): string {
  const answer = r.sameAnswer ? 'same answer' : 'different answer';
  const diverged = r.divergedAtTurn === undefined ? 'no divergence' : `diverged at turn ${r.divergedAtTurn}`;
  const t = r.tools;
  return (
    `${r.original} → ${r.replay} (${r.status}): ${answer}, ${diverged}; tools ${t.record} from the record, ` +
    `${t.live} live, ${t.notInRecord} not in the record; tokens ${r.old.tokens} → ${r.new.tokens}, ` +
    `cost ${money(r.old.cost)} → ${money(r.new.cost)}`
  );
}

function gradeLine(label: string, s: GradingSummary | undefined, why?: string): string {
  if (!s) return `${label}: not graded${why ? ` (${why})` : ''}`;
  const k = s.passAtK;
  const errors = s.errors > 0 ? `, ${s.errors} grading error(s)` : '';
  return `${label}: ${s.passed}/${s.graded} passed (${(s.passRate * 100).toFixed(1)}%), pass@${k.k} ${k.passed}/${k.tasks}${errors}`;
}

/** With variants: a graded line per variant, old then new. */
function variantLines(r: ReplayReport): string[] {
  const side = (label: string, list: VariantSummary[] | undefined) =>
    (list ?? []).map((v) => gradeLine(`${label} ${v.name}`, v.grading));
  return [...side('graded old', r.variants?.old), ...side('graded new', r.variants?.new)];
}

function render(cmd: Command, r: ReplayReport): string[] {
  const lines = r.runs.map(runLine);
  lines.push(
    `${r.sameAnswers}/${r.runs.length} same answers; tools ${r.tools.record} from the record, ${r.tools.live} live, ` +
      `${r.tools.notInRecord} not in the record; tokens ${r.old.tokens} → ${r.new.tokens}, cost ${money(r.old.cost)} → ${money(r.new.cost)}`,
  );
  if (r.grading)
    lines.push(gradeLine('graded old', r.grading.old, r.oldNotGraded), gradeLine('graded new', r.grading.new));
  lines.push(...variantLines(r));
  const first = r.runs.find((x) => x.divergedAtTurn !== undefined) ?? r.runs[0];
  if (first)
    lines.push(
      `compare: ${pasteable(cmd, ['transcript', first.original])}`,
      `         ${pasteable(cmd, ['transcript', first.replay])}`,
    );
  return lines;
}
