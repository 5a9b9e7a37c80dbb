/**
 * `keel schedule create|list|describe|pause|unpause|trigger|backfill|delete`: recurring batches as Temporal Schedules
 * (client/schedule-client.ts). A schedule starts `agentBatchWorkflow` over the tasks of a JSONL file copied into its
 * action (or one run with `--prompt`); batch ids are `keel-batch-<name>-<scheduled time>`.
 */
import { readFileSync } from 'node:fs';
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  type ScheduleHandle,
  type ScheduleOverlapPolicy,
} from '@temporalio/client';
import { InvalidArgumentError, type Command } from 'commander';
import type { AgentRunInput } from '../../common/run.js';
import {
  durationMs,
  InvalidScheduleError,
  recentScheduled,
  SCHEDULE_MEMO_KEY,
  triggerSchedule,
  type AgentScheduleMemo,
  type ScheduledWorkflow,
  type ScheduleTrigger,
} from '../../client/schedule-client.js';
import type { AgentClient } from '../../client/agent-client.js';
import { act, EXIT, globals, intOption, printJson, usageError, withClient, type GlobalOptions } from '../context.js';
import { formatCost, formatDuration, formatTokens } from '../render.js';
import { budgetFromFlags, pasteable, variantOption } from './batch.js';
import { budgetOptions, taskDefaultOptions } from '../batch/options.js';
import type { BatchVariant } from '../../common/grading.js';
import type { Budget } from '../../common/budget.js';
import { MAX_TASKS, parseTasks } from '../batch/tasks.js';
import { DEFAULT_MODEL } from './run.js';

const OVERLAPS = ['skip', 'buffer-one', 'buffer-all', 'cancel-other', 'terminate-other', 'allow-all'] as const;

function overlapOption(value: string): ScheduleOverlapPolicy {
  if (!(OVERLAPS as readonly string[]).includes(value))
    throw new InvalidArgumentError(`--overlap takes one of ${OVERLAPS.join(', ')}.`);
  return value.toUpperCase().replace('-', '_') as ScheduleOverlapPolicy;
}

/** What becomes of a start triggered while the schedule runs a workflow, under SKIP or a buffer (else nothing). */
function triggerNote(t: ScheduleTrigger): string[] {
  const [running] = t.running;
  if (!running) return [];
  if (t.overlap === 'SKIP')
    return [
      `${running} is running, so this start is skipped. Give --overlap allow-all to start one beside it, or buffer-one to start one when it ends.`,
    ];
  if (t.overlap === 'BUFFER_ONE')
    return [`${running} is running: this start waits until it ends (one start waits at most; more are skipped).`];
  if (t.overlap === 'BUFFER_ALL') return [`${running} is running: this start waits until it ends.`];
  return [];
}

/** `SKIP` → `skip`, `BUFFER_ONE` → `buffer-one`. */
const overlapName = (p: string | undefined): string => (p ?? 'SKIP').toLowerCase().replace('_', '-');

function durationOption(name: string): (value: string) => string {
  return (value) => {
    try {
      durationMs(value, name);
    } catch (err) {
      throw new InvalidArgumentError((err as Error).message);
    }
    return value;
  };
}

function dateOption(name: string): (value: string) => Date {
  return (value) => {
    const d = new Date(value);
    if (Number.isNaN(d.getTime()))
      throw new InvalidArgumentError(`${name} must be a date and time, e.g. 2026-12-01T00:00:00Z.`);
    return d;
  };
}

/** The schedule's page in the Web UI. */
export function scheduleLink(g: Pick<GlobalOptions, 'ui' | 'namespace'>, scheduleId: string): string {
  return `${g.ui}/namespaces/${encodeURIComponent(g.namespace)}/schedules/${encodeURIComponent(scheduleId)}`;
}

/** `batch of 3 task(s) from tasks.jsonl` / `one run`. */
function runsText(m: AgentScheduleMemo | undefined): string {
  if (!m) return 'not a Keel schedule';
  return `${m.kind === 'batch' ? `batch of ${m.tasks} task(s)` : 'one run'}${m.source ? ` from ${m.source}` : ''}`;
}

/** The handle, after checking the schedule exists (a usage error naming `keel schedule list` otherwise). */
async function existing(client: AgentClient, g: GlobalOptions, cmd: Command, name: string): Promise<ScheduleHandle> {
  const handle = client.client.schedule.getHandle(name);
  try {
    await handle.describe();
  } catch (err) {
    if (err instanceof ScheduleNotFoundError)
      throw usageError(
        `No schedule ${name} in namespace ${g.namespace}. List them with: ${pasteable(cmd, ['schedule', 'list'])}`,
      );
    throw err;
  }
  return handle;
}

/** One line of a scheduled workflow: id, status, and a batch's outcome counts. */
function scheduledLine(w: ScheduledWorkflow): string {
  const parts = [w.workflowId, w.status];
  if (w.result) {
    const g = w.result.grading;
    parts.push(
      `${w.result.done}/${w.result.total} done · ${w.result.failed} failed · ${formatTokens(w.result.tokens)} tokens · ${formatCost(w.result.cost)}` +
        (g ? ` · passed ${g.passed}/${g.graded} · pass@${g.passAtK.k} ${g.passAtK.passed}/${g.passAtK.tasks}` : ''),
    );
  } else if (w.progress)
    parts.push(
      `${w.progress.done}/${w.progress.total} done · ${w.progress.failed} failed · ${w.progress.running} running · ${w.progress.queued} queued`,
    );
  return `  ${parts.join('  ')}`;
}

interface CreateFlags {
  cron?: string;
  every?: string;
  prompt?: string;
  overlap?: ScheduleOverlapPolicy;
  catchupWindow?: string;
  paused?: boolean;
  note?: string;
  concurrency?: number;
  model?: string;
  tools?: string[];
  system?: string;
  maxTurns?: number;
  maxTokens?: number;
  maxCostUsd?: number;
  maxModelCalls?: number;
  canAfterTasks?: number;
  canAfterEvents?: number;
  repeat?: number;
  variant?: BatchVariant[];
}

export function register(program: Command): void {
  const schedule = program
    .command('schedule')
    .summary('recurring batches: Temporal Schedules that start a batch (or a run) by cron or interval')
    .description(
      'A schedule starts agentBatchWorkflow over the tasks of a JSONL file (copied into the schedule) at each cron or ' +
        'interval time; batch ids are keel-batch-<name>-<scheduled time, UTC>. While a batch runs, a due one is skipped ' +
        '(--overlap). Pause, trigger, backfill and delete it here or in the Web UI.',
    );
  createCommand(schedule).action(act(createSchedule));
  schedule
    .command('list')
    .summary('the Keel schedules of the namespace: state, spec, what they run, next start')
    .action(act(listSchedules));
  schedule
    .command('describe')
    .summary('spec, state, next starts, and the last batches with their outcome counts')
    .argument('<name>')
    .option('--last <n>', 'how many recent batches (at most 10: what Temporal keeps)', intOption('--last'), 5)
    .action(act(describeSchedule));
  registerVerbs(schedule);
}

/** `keel schedule create`'s arguments and options. */
function createCommand(schedule: Command): Command {
  return budgetOptions(
    taskDefaultOptions(
      schedule
        .command('create')
        .summary('create a schedule of a batch (tasks.jsonl) or of one run (--prompt)')
        .argument('<name>', 'schedule id (batch ids are keel-batch-<name>-<scheduled time>)')
        .argument('[tasks.jsonl]', 'task file, as for `keel batch` (its tasks are copied into the schedule)')
        .option('--cron <expression>', 'cron expression, UTC (e.g. "0 2 * * *": each night at 02:00)')
        .option('--every <duration>', 'interval (e.g. 6h, 30m, 1s)', durationOption('--every'))
        .option('--prompt <text>', 'schedule one run of this prompt instead of a batch (ids keel-run-<name>-<time>)')
        .option(
          '--overlap <policy>',
          `when a start is due while the last one runs: ${OVERLAPS.join(', ')}`,
          overlapOption,
        )
        .option(
          '--catchup-window <duration>',
          'how late a start missed while Temporal was down may still happen (default 1 year)',
          durationOption('--catchup-window'),
        )
        .option('--paused', 'create it paused')
        .option('--note <text>', 'a note shown with its state (e.g. why it is paused)')
        .option('-c, --concurrency <n>', 'runs at a time in each batch (default 8)', intOption('--concurrency')),
    ),
    {
      tokens: 'budget of each batch (of each run with --prompt): tokens of all its tasks together',
      costUsd: 'budget of each batch (run): US dollars',
      modelCalls: 'budget of each batch (run): model requests',
    },
  )
    .option('--can-after-tasks <n>', 'continue-as-new after starting n children', intOption('--can-after-tasks'))
    .option('--can-after-events <n>', 'continue-as-new once a run has n events', intOption('--can-after-events', 100))
    .option(
      '--repeat <k>',
      'run each task k times in each batch, for pass@k (README "Graded batches")',
      intOption('--repeat'),
    )
    .option(
      '--variant <name:model=…,system=…>',
      'run each task once per variant in each batch (repeatable), as keel batch --variant',
      variantOption,
    );
}

/** `keel schedule create`: a schedule of a batch (a task file) or of one run (--prompt). */
async function createSchedule(name: string, file: string | undefined, o: CreateFlags, cmd: Command): Promise<number> {
  const g = globals(cmd);
  if ((o.cron === undefined) === (o.every === undefined))
    throw usageError('Give one of --cron "<expression>" and --every <duration> (e.g. --cron "0 2 * * *").');
  if ((file === undefined) === (o.prompt === undefined))
    throw usageError('Give a task file (a batch) or --prompt "<text>" (one run), not both.');
  const { tasks, run: scheduled } = scheduledWork(file, o);
  let run = scheduled;
  const budget = budgetFromFlags(o);
  // a single run's budget is its own (README "Budgets")
  if (run && budget) run = { ...run, budget };
  return withClient(g, (client) => createIn(client, g, cmd, name, file, o, { tasks, run, budget }));
}

/** The tasks of `file` (a batch), or the one run of `--prompt`; batch-only options on a --prompt schedule are refused. */
function scheduledWork(file: string | undefined, o: CreateFlags): { tasks?: AgentRunInput[]; run?: AgentRunInput } {
  const defaults = {
    model: o.model ?? process.env.KEEL_MODEL ?? DEFAULT_MODEL,
    tools: o.tools,
    system: o.system,
    maxTurns: o.maxTurns,
  };
  let tasks: AgentRunInput[] | undefined;
  let run: AgentRunInput | undefined;
  if (file !== undefined) {
    let text: string;
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (err) {
      throw usageError(`${file}: ${(err as Error).message}`);
    }
    tasks = parseTasks(text, defaults);
    if (tasks.length === 0) throw usageError(`${file}: no tasks`);
    if (tasks.length > MAX_TASKS)
      throw usageError(`${file}: ${tasks.length} tasks; split them into schedules of at most ${MAX_TASKS}.`);
  } else {
    if (
      o.concurrency !== undefined ||
      o.canAfterTasks !== undefined ||
      o.canAfterEvents !== undefined ||
      o.repeat !== undefined ||
      o.variant !== undefined
    )
      throw usageError(
        '--concurrency, --can-after-*, --repeat and --variant are options of a batch; a --prompt schedule starts one run.',
      );
    run = parseTasks(JSON.stringify(o.prompt), defaults)[0];
  }
  return { tasks, run };
}

/** Creates the schedule and prints what it starts, its ids and links. */
async function createIn(
  client: AgentClient,
  g: GlobalOptions,
  cmd: Command,
  name: string,
  file: string | undefined,
  o: CreateFlags,
  { tasks, run, budget }: { tasks?: AgentRunInput[]; run?: AgentRunInput; budget?: Budget },
): Promise<number> {
  try {
    await client.schedule({
      scheduleId: name,
      ...(o.cron !== undefined ? { cron: o.cron } : { every: o.every }),
      ...(tasks ? { tasks } : { run }),
      batch: {
        ...(o.concurrency !== undefined ? { concurrency: o.concurrency } : {}),
        ...(o.canAfterTasks !== undefined ? { continueAsNewAfterTasks: o.canAfterTasks } : {}),
        ...(o.canAfterEvents !== undefined ? { continueAsNewAfterEvents: o.canAfterEvents } : {}),
        ...(budget ? { budget } : {}),
        ...(o.repeat !== undefined ? { repeat: o.repeat } : {}),
        ...(o.variant ? { variants: o.variant } : {}),
      },
      ...(o.overlap ? { overlap: o.overlap } : {}),
      ...(o.catchupWindow ? { catchupWindow: o.catchupWindow } : {}),
      ...(o.paused ? { paused: true } : {}),
      ...(o.note ? { note: o.note } : {}),
      ...(file !== undefined && file !== '-' ? { source: file } : {}),
    });
  } catch (err) {
    if (err instanceof InvalidScheduleError) throw usageError(err.message);
    if (err instanceof ScheduleAlreadyRunning)
      throw usageError(
        `Schedule ${name} already exists. See it with: ${pasteable(cmd, ['schedule', 'describe', name])}`,
      );
    throw err;
  }
  const spec = o.cron !== undefined ? `cron ${o.cron}` : `every ${o.every}`;
  const prefix = tasks ? `keel-batch-${name}` : `keel-run-${name}`;
  if (g.json) {
    printJson({ scheduleId: name, spec, workflowIdPrefix: prefix, url: scheduleLink(g, name) });
    return EXIT.ok;
  }
  process.stdout.write(
    `Schedule ${name} created${o.paused ? ' (paused)' : ''}: ${spec} · ${tasks ? `batch of ${tasks.length} task(s)${file !== '-' ? ` from ${file}` : ''}` : 'one run'} · overlap ${overlapName(o.overlap)}\n` +
      `${tasks ? 'Batch' : 'Run'} ids: ${prefix}-<scheduled time, UTC, e.g. 2026-12-03T02:00:00Z>\n` +
      `Temporal UI: ${scheduleLink(g, name)}\n` +
      `Describe it with: ${pasteable(cmd, ['schedule', 'describe', name])}\n`,
  );
  return EXIT.ok;
}

/** `keel schedule list`: Keel's schedules (those with its memo), one line each. */
async function listSchedules(_o: unknown, cmd: Command): Promise<number> {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    const rows: { scheduleId: string; paused: boolean; memo: AgentScheduleMemo; next?: string }[] = [];
    for await (const s of client.client.schedule.list()) {
      const memo = s.memo?.[SCHEDULE_MEMO_KEY] as AgentScheduleMemo | undefined;
      if (!memo) continue; // not Keel's
      rows.push({
        scheduleId: s.scheduleId,
        paused: s.state.paused,
        memo,
        ...(s.info.nextActionTimes[0] ? { next: s.info.nextActionTimes[0].toISOString() } : {}),
      });
    }
    rows.sort((a, b) => a.scheduleId.localeCompare(b.scheduleId));
    if (g.json) printJson(rows);
    else if (rows.length === 0) process.stdout.write('No Keel schedules.\n');
    else
      process.stdout.write(
        rows
          .map(
            (r) =>
              `${r.scheduleId}  ${r.paused ? 'paused' : 'active'}  ${r.memo.spec}  ${runsText(r.memo)}` +
              (r.next && !r.paused ? `  next ${r.next}` : ''),
          )
          .join('\n') + '\n',
      );
    return EXIT.ok;
  });
}

/** `keel schedule describe`: spec, state, next starts and the recent batches. */
async function describeSchedule(name: string, o: { last: number }, cmd: Command): Promise<number> {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    const handle = await existing(client, g, cmd, name);
    const d = await handle.describe();
    const { memo, workflows } = await recentScheduled(client.client, handle, Math.min(o.last, 10));
    if (g.json) {
      printJson({
        scheduleId: name,
        ...(memo ? { memo } : {}),
        paused: d.state.paused,
        ...(d.state.note ? { note: d.state.note } : {}),
        overlap: overlapName(d.policies.overlap),
        catchupWindowMs: d.policies.catchupWindow,
        nextActionTimes: d.info.nextActionTimes.map((t) => t.toISOString()),
        actionsTaken: d.info.numActionsTaken,
        skippedOverlap: d.info.numActionsSkippedOverlap,
        recent: workflows.map((w) => ({ ...w, scheduledAt: w.scheduledAt.toISOString() })),
        url: scheduleLink(g, name),
      });
      return EXIT.ok;
    }
    const lines = [
      `Schedule ${name} · ${d.state.paused ? 'paused' : 'active'}${d.state.note ? ` (${d.state.note})` : ''}`,
      `Runs: ${runsText(memo)}`,
      `Spec: ${memo?.spec ?? '?'} · overlap ${overlapName(d.policies.overlap)} · catch-up window ${formatDuration(d.policies.catchupWindow)}`,
      ...(memo ? [`Ids: ${memo.workflowIdPrefix}-<scheduled time, UTC>`] : []),
      `Next: ${
        d.state.paused
          ? '(paused)'
          : d.info.nextActionTimes
              .slice(0, 3)
              .map((t) => t.toISOString())
              .join(', ') || '(none)'
      }`,
      `Started ${d.info.numActionsTaken} · skipped while one ran ${d.info.numActionsSkippedOverlap} · missed the catch-up window ${d.info.numActionsMissedCatchupWindow}`,
      workflows.length ? `Last ${workflows.length}:` : 'Nothing started yet.',
      ...workflows.map(scheduledLine),
      `Temporal UI: ${scheduleLink(g, name)}`,
    ];
    process.stdout.write(`${lines.join('\n')}\n`);
    return EXIT.ok;
  });
}

/** What `keel schedule pause` / `unpause` take (`trigger` and `backfill` take `--overlap` of their own). */
interface VerbOptions {
  note?: string;
  overlap?: ScheduleOverlapPolicy;
}

/** `keel schedule pause`, `unpause`, `trigger`, `delete` and `backfill`. */
function registerVerbs(schedule: Command): void {
  registerSimple(
    schedule,
    'pause',
    'stop starting batches until unpaused',
    (h, o) => h.pause(o.note),
    (n) => `Schedule ${n} paused.`,
  ).option('--note <text>', 'why (shown with its state)');
  registerSimple(
    schedule,
    'unpause',
    'start batches again at the next scheduled time',
    (h, o) => h.unpause(o.note),
    (n) => `Schedule ${n} unpaused.`,
  ).option('--note <text>', 'a note shown with its state');
  registerTrigger(schedule);
  registerSimple(
    schedule,
    'delete',
    'delete the schedule (the batches it started are kept)',
    (h) => h.delete(),
    (n) => `Schedule ${n} deleted; the batches it started are kept.`,
  );
  registerBackfill(schedule);
}

/** A `keel schedule <verb> <name>` that does `fn` to the schedule and prints `done(name)`; returns it for its options. */
function registerSimple(
  schedule: Command,
  verb: string,
  summary: string,
  fn: (h: ScheduleHandle, o: VerbOptions) => Promise<void>,
  done: (name: string) => string,
): Command {
  return schedule
    .command(verb)
    .summary(summary)
    .argument('<name>')
    .action(act((name: string, o: VerbOptions, cmd: Command) => applyVerb(verb, fn, done, name, o, cmd)));
}

/** The action of a `registerSimple` verb: `fn` on the existing schedule, then `done(name)` (or JSON). */
async function applyVerb(
  verb: string,
  fn: (h: ScheduleHandle, o: VerbOptions) => Promise<void>,
  done: (name: string) => string,
  name: string,
  o: VerbOptions,
  cmd: Command,
): Promise<number> {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    await fn(await existing(client, g, cmd, name), o);
    if (g.json) printJson({ scheduleId: name, [verb]: true });
    else process.stdout.write(`${done(name)}\n`);
    return EXIT.ok;
  });
}

/** `keel schedule trigger`. */
function registerTrigger(schedule: Command): void {
  schedule
    .command('trigger')
    .summary('start a batch now (also when paused), under the schedule’s overlap policy unless --overlap is given')
    .argument('<name>')
    .option('--overlap <policy>', `overlap policy of this start (default the schedule's)`, overlapOption)
    .action(act(triggerNow));
}

/** `keel schedule backfill`. */
function registerBackfill(schedule: Command): void {
  schedule
    .command('backfill')
    .summary('start the batches the schedule would have started between two times')
    .argument('<name>')
    .requiredOption('--from <time>', 'start of the range, e.g. 2026-12-01T00:00:00Z', dateOption('--from'))
    .requiredOption('--to <time>', 'end of the range', dateOption('--to'))
    .option('--overlap <policy>', `overlap policy of these starts (default the schedule's)`, overlapOption)
    .action(act(backfill));
}

/** `keel schedule trigger`: a start now, under the schedule's overlap policy or --overlap. */
async function triggerNow(name: string, o: { overlap?: ScheduleOverlapPolicy }, cmd: Command): Promise<number> {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    const t = await triggerSchedule(await existing(client, g, cmd, name), o.overlap);
    if (g.json) printJson({ scheduleId: name, trigger: true, overlap: overlapName(t.overlap), running: t.running });
    else
      process.stdout.write(
        `${[`Schedule ${name} triggered (overlap ${overlapName(t.overlap)}).`, ...triggerNote(t)].join('\n')}\n`,
      );
    return EXIT.ok;
  });
}

/** `keel schedule backfill`: the starts the schedule would have made between --from and --to. */
async function backfill(
  name: string,
  o: { from: Date; to: Date; overlap?: ScheduleOverlapPolicy },
  cmd: Command,
): Promise<number> {
  const g = globals(cmd);
  if (o.to <= o.from) throw usageError('--to must be after --from.');
  return withClient(g, async (client) => {
    const handle = await existing(client, g, cmd, name);
    await handle.backfill({ start: o.from, end: o.to, ...(o.overlap ? { overlap: o.overlap } : {}) });
    if (g.json) printJson({ scheduleId: name, from: o.from.toISOString(), to: o.to.toISOString() });
    else
      process.stdout.write(
        `Schedule ${name}: backfilling ${o.from.toISOString()} to ${o.to.toISOString()}` +
          `${o.overlap ? ` (overlap ${overlapName(o.overlap)})` : ''}.\n`,
      );
    return EXIT.ok;
  });
}
