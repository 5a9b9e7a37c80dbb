/**
 * `keel batch tasks.jsonl --concurrency 8 --out results.jsonl`: starts `agentBatchWorkflow` (or re-attaches to the
 * batch these tasks already started), shows a progress bar (the `progress` query), and writes one result line per
 * task, in input order, read back from each child run. The parts live in batch/.
 */
import { batchCacheText } from '../../common/cache-usage.js';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { WorkflowExecutionAlreadyStartedError, type WorkflowHandle } from '@temporalio/client';
import { InvalidArgumentError, type Command } from 'commander';
import type { AgentClient } from '../../client/agent-client.js';
import { describeLine, type Budget } from '../../common/budget.js';
import type { AgentRunInput } from '../../common/run.js';
import { BATCH_WORKFLOW_TYPE, type AgentBatchResult, type BatchProgress } from '../../common/batch-definitions.js';
import {
  act,
  CliError,
  EXIT,
  globals,
  intOption,
  printJson,
  sleep,
  uiLink,
  usageError,
  withClient,
  shellWord,
  type GlobalOptions,
} from '../context.js';
import { formatCost, formatDuration, formatTokens, stdoutSink, type Sink } from '../render.js';
import { budgetOptions, taskDefaultOptions } from '../batch/options.js';
import { attachOrRefuse, priorBatch } from '../batch/existing.js';
import { firstFailure, progressPrinter } from '../batch/progress.js';
import { registerBatchRetryCommands } from './batch-retry.js';
import { OrderedWriter } from '../batch/results.js';
import { stopFollowingOn } from '../signals.js';
import { batchProgress, startBatch } from '../batch/start.js';
import { batchIdFor, MAX_TASKS, parseTasks } from '../batch/tasks.js';
import { DEFAULT_MODEL } from './run.js';
import { VARIANT_NAME, type BatchVariant } from '../../common/grading.js';
import { formatGradeTable, gradeRows, variantDurations } from '../../client/batch-report.js';

export { BATCH_WORKFLOW_TYPE };
export { printBatchStatus } from '../batch/progress.js';
export { batchProgress, startBatch, type StartBatchOptions } from '../batch/start.js';
export { batchIdFor, paginate, parseTasks, type TaskDefaults } from '../batch/tasks.js';

interface BatchFlags {
  concurrency: number;
  out?: string;
  id?: string;
  attach?: string;
  detach?: boolean;
  model?: string;
  tools?: string[];
  system?: string;
  maxTurns?: number;
  messages: boolean;
  pageSize?: number;
  canAfterTasks?: number;
  canAfterEvents?: number;
  maxTokens?: number;
  maxCostUsd?: number;
  maxModelCalls?: number;
  repeat?: number;
  variant?: BatchVariant[];
  grade?: boolean;
}

/** `--variant a:model=openai/gpt-5,system=@a.txt,max-turns=4` → a BatchVariant (repeatable). */
export function variantOption(value: string, previous: BatchVariant[] = []): BatchVariant[] {
  const colon = value.indexOf(':');
  const name = colon < 0 ? value : value.slice(0, colon);
  const example = '--variant a:model=scripted/a,system=@a.txt';
  if (!VARIANT_NAME.test(name))
    throw new InvalidArgumentError(`--variant ${value}: the name must be letters, digits, _ or . (e.g. ${example})`);
  if (previous.some((v) => v.name === name)) throw new InvalidArgumentError(`--variant ${name} is given twice`);
  const v: BatchVariant = { name };
  for (const part of colon < 0 ? [] : value.slice(colon + 1).split(',')) {
    const eq = part.indexOf('=');
    const key = part.slice(0, eq).trim();
    const val = part.slice(eq + 1);
    if (eq < 0 || !val)
      throw new InvalidArgumentError(`--variant ${value}: "${part}" is not key=value (e.g. ${example})`);
    if (key === 'model') v.model = val;
    else if (key === 'system') {
      if (!val.startsWith('@')) v.systemPrompt = val;
      else
        try {
          v.systemPrompt = readFileSync(val.slice(1), 'utf8');
        } catch (err) {
          throw new InvalidArgumentError(`--variant ${name}: system=${val}: ${(err as Error).message}`);
        }
    } else if (key === 'max-turns' && /^[1-9]\d*$/.test(val)) v.maxTurns = Number(val);
    else throw new InvalidArgumentError(`--variant ${value}: unknown "${key}" (keys: model, system, max-turns)`);
  }
  return [...previous, v];
}

/** The batch budget the flags give, if any. */
export function budgetFromFlags(o: Pick<BatchFlags, 'maxTokens' | 'maxCostUsd' | 'maxModelCalls'>): Budget | undefined {
  const b: Budget = {
    ...(o.maxTokens !== undefined ? { maxTokens: o.maxTokens } : {}),
    ...(o.maxCostUsd !== undefined ? { maxCostUsd: o.maxCostUsd } : {}),
    ...(o.maxModelCalls !== undefined ? { maxModelCalls: o.maxModelCalls } : {}),
  };
  return Object.keys(b).length ? b : undefined;
}

/** The command that picks a batch up again, with this invocation's connection options and output file. */
export function resumeCommand(cmd: Command, id: string, o: Pick<BatchFlags, 'out' | 'messages'>): string {
  const parts = ['batch', '--attach', id];
  if (o.out) parts.push('--out', o.out);
  if (o.messages === false) parts.push('--no-messages');
  return pasteable(cmd, parts);
}

/** `npx keel <this invocation's connection options> <args>`, quoted for a POSIX shell. */
export function pasteable(cmd: Command, args: string[]): string {
  const g = cmd.optsWithGlobals<{ address?: string; namespace?: string; taskQueue?: string; ui?: string }>();
  const parts = ['npx', 'keel'];
  if (g.address) parts.push('--address', g.address);
  if (g.namespace) parts.push('--namespace', g.namespace);
  if (g.taskQueue) parts.push('--task-queue', g.taskQueue);
  if (g.ui) parts.push('--ui', g.ui);
  parts.push(...args);
  return parts.map(shellWord).join(' ');
}

export function register(program: Command): void {
  const batch = program.command('batch');
  registerBatchRetryCommands(batch);
  batchOptions(batch).action(act(runBatch));
}

/** `keel batch`'s summary, description, argument and options. */
function batchOptions(batch: Command): Command {
  return budgetOptions(
    taskDefaultOptions(
      batch
        .summary('run every task of a JSONL file as a durable batch, with a progress bar; results in input order')
        .description(
          'Each line of <tasks.jsonl> is an AgentRunInput (fields it lacks come from --model/--tools/--system/--max-turns) or a ' +
            'prompt string. Starts agentBatchWorkflow (children <batchId>-<index>, at most --concurrency at a time; it survives ' +
            'worker restarts and continues-as-new on its own), shows its progress, and writes one line per task, in input order, ' +
            'to --out (default stdout): { index, workflowId, status, finalText, usage, turns, error?, newMessages }. ' +
            'Exit code 0 when every task completed (or stopped), 1 when some failed (the summary names the first failure). Without ' +
            '--id the batch id derives from the tasks, so the same command again re-attaches to that batch while it runs or ' +
            'when it succeeded; a batch id names one batch, so a taken id is otherwise refused with the command to retry what ' +
            'has no result (`keel batch retry <batchId>`) or to give another --id. Ctrl-C / SIGTERM stops following (the batch goes on) ' +
            'and prints the exact command that resumes.',
        )
        .argument('[tasks.jsonl]', 'task file (- for stdin)')
        .option('-c, --concurrency <n>', 'runs at a time', intOption('--concurrency'), 8)
        .option('--out <results.jsonl>', 'result file (one JSON line per task, input order)')
        .option(
          '--id <batchId>',
          'batch workflow id, not used before (default keel-batch-<hash of the tasks>: the same file again re-attaches to a running or succeeded batch)',
        )
        .option('--attach <batchId>', 'follow an existing batch instead of starting one')
        .option('--detach', 'start the batch, print its id and link, and return'),
    ),
    {
      tokens: 'budget of the whole batch: tokens of all tasks together',
      costUsd: 'budget of the whole batch: US dollars of all tasks together',
      modelCalls: 'budget of the whole batch: model requests of all tasks together',
    },
  )
    .option('--no-messages', 'leave newMessages out of the result lines')
    .option(
      '--repeat <k>',
      'run each task k times (per variant), for pass@k: children <batchId>-<index>-r<j>',
      intOption('--repeat'),
    )
    .option(
      '--variant <name:model=…,system=…>',
      'run each task once per variant (repeatable): name:model=<provider/model>,system=<text or @file>,max-turns=<n>; children <batchId>-<name>-<index>',
      variantOption,
    )
    .option('--grade', 'print the grade table at the end: pass rate, pass@k, mean score, cost per pass, per variant')
    .option(
      '--page-size <n>',
      'hand tasks to the batch by page reference, n per page (automatic above ~1 MB of tasks)',
      intOption('--page-size'),
    )
    .option(
      '--can-after-tasks <n>',
      'continue-as-new after starting n children in one run (default: when history grows large)',
      intOption('--can-after-tasks'),
    )
    .option(
      '--can-after-events <n>',
      'continue-as-new once one run has n history events (default 10000)',
      intOption('--can-after-events', 100),
    );
}

/** `keel batch`: starts (or attaches to) a batch, follows it with a progress bar, and writes its results in order. */
async function runBatch(file: string | undefined, o: BatchFlags, cmd: Command): Promise<number> {
  const g = globals(cmd);
  if (!file && !o.attach) throw usageError('Give a task file (`keel batch tasks.jsonl`) or --attach <batchId>.');
  const budget = budgetFromFlags(o);
  if (budget && o.attach)
    throw usageError(
      '--max-tokens, --max-cost-usd and --max-model-calls set the budget of a new batch; --attach follows a batch with the budget it started with.',
    );
  const tasks = o.attach ? [] : readBatchTasks(file!, o);
  return withClient(g, async (client) => {
    const { handle, attachTo } = await batchHandle(client, g, cmd, { file, o, tasks, budget });
    return followBatch(client, g, cmd, { handle, attachTo, o, tasks, budget });
  });
}

/** The tasks of `file` (- for stdin), with the flags' defaults; none, or too many, is a usage error. */
function readBatchTasks(file: string, o: BatchFlags): AgentRunInput[] {
  let text: string;
  try {
    text = readFileSync(file === '-' ? 0 : file, 'utf8');
  } catch (err) {
    throw usageError(`${file}: ${(err as Error).message}`);
  }
  const tasks = parseTasks(text, {
    model: o.model ?? process.env.KEEL_MODEL ?? DEFAULT_MODEL,
    tools: o.tools,
    system: o.system,
    maxTurns: o.maxTurns,
  });
  if (tasks.length === 0) throw usageError(`${file}: no tasks`);
  if (tasks.length > MAX_TASKS)
    throw usageError(
      `${file}: ${tasks.length} tasks; one batch keeps a compact outcome per task, so split it into batches of at most ${MAX_TASKS}.`,
    );
  return tasks;
}

/** What `keel batch` follows: an existing batch (--attach, or the one these tasks already started), else a new one. */
async function batchHandle(
  client: AgentClient,
  g: GlobalOptions,
  cmd: Command,
  { file, o, tasks, budget }: { file?: string; o: BatchFlags; tasks: AgentRunInput[]; budget?: Budget },
): Promise<{ handle: WorkflowHandle; attachTo?: string }> {
  // Without --id the id comes from the tasks: a batch these tasks already started is re-attached while it runs
  // or when it succeeded; any other taken id is refused with what to do (batch/existing.ts)
  let attachTo = o.attach;
  if (!attachTo) {
    const wanted = o.id ?? batchIdFor(tasks, { variants: o.variant, repeat: o.repeat });
    const prior = await priorBatch(client, wanted);
    const paste = (args: string[]) => pasteable(cmd, args);
    if (prior && attachOrRefuse(prior, o.id === undefined, paste, resumeCommand(cmd, wanted, o))) attachTo = wanted;
  }
  if (attachTo) return { handle: client.client.workflow.getHandle(attachTo), attachTo };
  const handle = await startBatch(client, g.taskQueue, tasks, {
    batchId: o.id,
    concurrency: o.concurrency,
    pageSize: o.pageSize,
    continueAsNewAfterTasks: o.canAfterTasks,
    continueAsNewAfterEvents: o.canAfterEvents,
    budget,
    ...(o.repeat !== undefined ? { repeat: o.repeat } : {}),
    ...(o.variant?.length ? { variants: o.variant } : {}),
    summary: `batch of ${tasks.length} agent runs from ${file}`,
  }).catch((err: unknown) => {
    // --id naming a batch that exists: say how to follow it (a pasteable command) instead of a bare refusal
    if (err instanceof WorkflowExecutionAlreadyStartedError)
      throw usageError(
        `Batch ${err.workflowId} already exists. Follow it with: ${resumeCommand(cmd, err.workflowId, o)}\n` +
          'Or give another --id to run the tasks again.',
      );
    throw err;
  });
  return { handle };
}

/** A followed batch: the handle, whether it was attached to, the flags, its tasks and budget. */
interface Followed {
  handle: WorkflowHandle;
  attachTo?: string;
  o: BatchFlags;
  tasks: AgentRunInput[];
  budget?: Budget;
}

/** Prints the batch's header (or only its id with --detach), then follows it to its end. */
async function followBatch(client: AgentClient, g: GlobalOptions, cmd: Command, f: Followed): Promise<number> {
  const { handle, attachTo, o } = f;
  const id = handle.workflowId;
  const url = uiLink(g, id);
  const d = attachTo ? await handle.describe() : undefined;
  if (d && d.type !== BATCH_WORKFLOW_TYPE) throw usageError(`${id} is a ${d.type}, not a batch`);
  // status lines go to stderr when the results go to stdout
  const sink = o.out || o.detach ? stdoutSink() : stdoutSink(process.stderr);
  if (attachTo && !o.attach && !g.json) {
    sink.write(
      `These tasks already started batch ${id} (${d!.status.name.toLowerCase()}): attaching to it. Give --id <new id> to run them again.\n`,
    );
  }
  if (o.detach) {
    if (g.json) printJson({ workflowId: id, url });
    else sink.write(`${id}\n${url}\n`);
    return EXIT.ok;
  }
  const stop = stopFollowingOn(['SIGINT', 'SIGTERM']); // before the header: a signal sent on seeing it is caught
  try {
    const first = await batchProgress(handle);
    if (!g.json) {
      const size = first?.total ?? f.tasks.length;
      const concurrency = first?.concurrency ?? o.concurrency;
      sink.write(`batch ${id}${size ? ` · ${size} tasks` : ''} · concurrency ${concurrency}\nTemporal UI: ${url}\n`);
    }
    return await pollBatch(client, g, cmd, f, { id, url, sink, first, stopped: stop.signal });
  } finally {
    stop.dispose();
  }
}

/** Where a followed batch's status goes, and what was known of it when following began. */
interface Following {
  id: string;
  url: string;
  sink: Sink;
  first?: BatchProgress;
  /** Aborted when Ctrl-C / SIGTERM stops following. */
  stopped: AbortSignal;
}

/** Polls the batch until it closes (results written in order as they come), or until Ctrl-C stops following. */
async function pollBatch(
  client: AgentClient,
  g: GlobalOptions,
  cmd: Command,
  f: Followed,
  at: Following,
): Promise<number> {
  const { handle, o } = f;
  const { id, sink } = at;
  const fd = o.out ? openSync(o.out, 'w') : 1;
  const writer = new OrderedWriter(client, (line) => writeSync(fd, `${line}\n`), o.messages);
  const bar = progressPrinter(g.json ? { ...sink, tty: false, write: () => undefined } : sink);
  let last: BatchProgress | undefined;
  try {
    for (;;) {
      const d = await handle.describe();
      const p = await batchProgress(handle);
      if (p) {
        last = p;
        bar.update(p);
        await writer.pump(handle, p.total);
      }
      if (d.status.name !== 'RUNNING') break;
      if (at.stopped.aborted) {
        if (sink.tty) sink.write('\n');
        sink.write(`Stopped following; the batch goes on. Resume with: ${resumeCommand(cmd, id, o)}\n`);
        return 130;
      }
      await sleep(250);
    }
    return await finishBatch(client, g, f, at, { writer, bar, last });
  } finally {
    if (o.out) closeSync(fd);
  }
}

/** The closed batch: its last results, the final progress line, and the summary (with the grade table and budget). */
async function finishBatch(
  client: AgentClient,
  g: GlobalOptions,
  { handle, o, budget }: Followed,
  { id, url, sink, first }: Following,
  { writer, bar, last }: { writer: OrderedWriter; bar: ReturnType<typeof progressPrinter>; last?: BatchProgress },
): Promise<number> {
  const shape = { variants: o.variant, repeat: o.repeat };
  let summary: AgentBatchResult;
  try {
    summary = (await handle.result()) as AgentBatchResult;
  } catch (err) {
    if (sink.tty) sink.write('\n');
    throw new CliError(EXIT.runFailed, `Batch ${id} did not complete: ${(err as Error).message}\nTemporal UI: ${url}`);
  }
  await writer.finish(id, summary.total, handle, shape);
  const concurrency = last?.concurrency ?? first?.concurrency ?? o.concurrency;
  // the budget as the finished batch left it (the last poll may predate the last tasks)
  const spent = budget || last?.budget ? ((await batchProgress(handle))?.budget ?? last?.budget) : undefined;
  const final: BatchProgress = {
    total: summary.total,
    done: summary.done,
    failed: summary.failed,
    running: 0,
    queued: 0,
    tokens: summary.tokens,
    cost: summary.cost,
    continuedAsNew: summary.continuedAsNew,
    concurrency,
    phase: 'finished',
    ...(spent ? { budget: spent } : {}),
  };
  bar.update(final, true);
  const ms = Date.now() - bar.began;
  const rate = bar.rate(final);
  const table =
    o.grade || summary.variants
      ? gradeRows(summary, await variantDurations(client.client, id, shape, summary.total))
      : undefined;
  if (g.json)
    printJson({
      workflowId: id,
      url,
      ...summary,
      ...(table ? { gradeTable: table } : {}),
      ...(spent ? { budget: spent } : {}),
      durationMs: ms,
      out: o.out ?? null,
    });
  else
    sink.write(
      `${summary.failed === 0 ? '✔' : '✘'} ${summary.done}/${summary.total} done · ${summary.failed} failed · ${formatTokens(summary.tokens)} tokens${batchCacheText(summary)} · ${formatCost(summary.cost)} · ` +
        `${formatDuration(ms)}${rate !== undefined ? ` · ${rate.toFixed(0)} tasks/min` : ''} · concurrency ${concurrency} · continued-as-new ${summary.continuedAsNew}×\n` +
        (firstFailure(summary) ? `${firstFailure(summary)}\n` : '') +
        (spent
          ? `Budget: ${spent.lines.map(describeLine).join(', ')}${spent.spent ? ' — spent: no further task started' : ''}\n`
          : '') +
        (table ? `${formatGradeTable(summary, table).join('\n')}\n` : '') +
        `${o.out ? `Results: ${o.out}\n` : ''}Temporal UI: ${url}\n`,
    );
  return summary.failed === 0 ? EXIT.ok : EXIT.runFailed;
}
