/**
 * `keel batch tasks.jsonl --concurrency 8 --out results.jsonl`: starts `agentBatchWorkflow`, shows a progress bar
 * (the `progress` query), and writes one result line per task, in input order, read back from each child run.
 */
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import type { WorkflowHandle } from '@temporalio/client';
import type { Command } from 'commander';
import type { AgentRunInput, AgentRunResult } from '../../common/run.js';
import { agentRunInputErrors } from '../../common/validate-input.js';
import { BATCH_WORKFLOW_TYPE, progressQuery, resultsQuery, type AgentBatchResult, type BatchProgress, type BatchTaskResult } from '../../workflows/batch-definitions.js';
import { paginate, startBatchWorkflow, type StartBatchOptions } from '../batch-client.js';
import type { AgentClient } from '../agent-client.js';
import { act, CliError, commaList, EXIT, globals, intOption, printJson, sleep, uiLink, usageError, withClient, type GlobalOptions } from './context.js';
import { outcomeOf, temporalStatus, withDeadline } from './outcome.js';
import { formatCost, formatDuration, formatTokens, progressLine, stdoutSink, type Sink } from './render.js';

export { BATCH_WORKFLOW_TYPE, paginate };

/** One batch carries ~20 bytes per task across continue-as-new (2 MB payload limit). */
const MAX_TASKS = 50_000;

export interface TaskDefaults {
  model?: string;
  tools?: string[];
  system?: string;
  maxTurns?: number;
}

/**
 * Parses a JSONL task file: each non-empty line is an AgentRunInput object (fields missing there come from the
 * defaults) or a JSON string (a prompt). Every bad line is reported, with its line number.
 */
export function parseTasks(text: string, defaults: TaskDefaults = {}): AgentRunInput[] {
  const tasks: AgentRunInput[] = [];
  const errors: string[] = [];
  text.split('\n').forEach((raw, n) => {
    const line = raw.trim();
    if (!line || line.startsWith('//')) return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (err) {
      errors.push(`line ${n + 1}: not JSON (${(err as Error).message})`);
      return;
    }
    const task: Record<string, unknown> = typeof value === 'string' ? { prompt: value } : (value as Record<string, unknown>);
    if (!task || typeof task !== 'object' || Array.isArray(task)) {
      errors.push(`line ${n + 1}: must be an AgentRunInput object or a prompt string`);
      return;
    }
    if (task.model === undefined && defaults.model) task.model = defaults.model;
    if (task.tools === undefined && defaults.tools) task.tools = defaults.tools;
    if (task.systemPrompt === undefined && defaults.system !== undefined) task.systemPrompt = defaults.system;
    if (task.maxTurns === undefined && defaults.maxTurns !== undefined) task.maxTurns = defaults.maxTurns;
    const bad = agentRunInputErrors(task);
    if (bad.length) errors.push(`line ${n + 1}: ${bad.join('; ')}`);
    else tasks.push(task as unknown as AgentRunInput);
  });
  if (errors.length) {
    const shown = errors.slice(0, 20);
    throw usageError(`Invalid tasks:\n  ${shown.join('\n  ')}${errors.length > shown.length ? `\n  … and ${errors.length - shown.length} more` : ''}`);
  }
  return tasks;
}

/** Starts `agentBatchWorkflow` with the client's task queue (see `AgentClient.startBatch`). */
export async function startBatch(client: AgentClient, taskQueue: string, tasks: AgentRunInput[], o: StartBatchOptions = {}): Promise<WorkflowHandle> {
  return startBatchWorkflow(client.client, taskQueue, tasks, o);
}

export async function batchProgress(handle: WorkflowHandle): Promise<BatchProgress | undefined> {
  try {
    return await withDeadline(handle, 5000, () => handle.query(progressQuery));
  } catch {
    return undefined;
  }
}

/** One output line: the child's full AgentRunResult (or its failure), with its index and workflow id. */
async function resultLine(client: AgentClient, r: BatchTaskResult, withMessages: boolean): Promise<string> {
  const out: { status: string; result: Omit<AgentRunResult, 'usage' | 'status'> & { usage?: AgentRunResult['usage'] }; failureType?: string } = await outcomeOf(
    client.client.workflow.getHandle(r.workflowId),
    { stateTimeoutMs: 1000 },
  ).catch((err: Error) => ({
    status: r.status,
    result: { finalText: '', newMessages: [], turns: r.turns ?? 0, error: r.error ?? err.message },
  }));
  const { newMessages, ...rest } = out.result;
  return JSON.stringify({
    index: r.index,
    workflowId: r.workflowId,
    ...rest,
    status: out.status,
    ...(out.failureType ? { failureType: out.failureType } : {}),
    ...(withMessages ? { newMessages } : {}),
  });
}

/**
 * Writes result lines in input order as tasks finish: polls the `results` query from the first unwritten index and
 * reads finished children's results (a few at a time).
 */
class OrderedWriter {
  next = 0;
  private pending = new Map<number, Promise<string>>();

  constructor(
    private readonly client: AgentClient,
    private readonly write: (line: string) => void,
    private readonly withMessages: boolean,
    private readonly parallel = 16,
  ) {}

  async pump(handle: WorkflowHandle, total: number): Promise<void> {
    if (this.next >= total) return;
    let page: { results: BatchTaskResult[] } | undefined;
    try {
      page = await withDeadline(handle, 10_000, () => handle.query(resultsQuery, { from: this.next, limit: 256 }));
    } catch {
      return; // no worker answers right now: try on the next tick
    }
    for (const r of page.results) {
      if (r.status === 'running' || r.status === 'queued') break;
      if (this.pending.size >= this.parallel) break;
      if (!this.pending.has(r.index)) this.pending.set(r.index, resultLine(this.client, r, this.withMessages));
    }
    await this.flush();
  }

  /** After the batch closed every child is final: read the rest straight from the children (no query, no worker needed). */
  async finish(batchId: string, total: number): Promise<void> {
    while (this.next < total) {
      for (let i = this.next; i < Math.min(total, this.next + this.parallel); i++) {
        if (!this.pending.has(i)) this.pending.set(i, resultLine(this.client, { index: i, workflowId: `${batchId}-${i}`, status: 'failed' }, this.withMessages));
      }
      await this.flush();
    }
  }

  private async flush(): Promise<void> {
    while (this.pending.has(this.next)) {
      const line = await this.pending.get(this.next)!;
      this.pending.delete(this.next);
      this.write(line);
      this.next += 1;
    }
  }
}

function progressPrinter(sink: Sink) {
  let lastPlain = 0;
  let lastText = '';
  const began = Date.now();
  return {
    update(p: BatchProgress, final = false) {
      const finished = p.done + p.failed;
      const minutes = (Date.now() - began) / 60_000;
      const rate = minutes > 0.02 ? finished / minutes : undefined;
      if (sink.tty) {
        sink.write(`\r${progressLine(p, sink, rate)}\u001b[K${final ? '\n' : ''}`);
        return;
      }
      const text = `progress total=${p.total} done=${p.done} failed=${p.failed} running=${p.running} queued=${p.queued} tokens=${p.tokens} cost=${p.cost.toFixed(6)}`;
      if (final || (text !== lastText && Date.now() - lastPlain >= 2000)) {
        sink.write(`${text}\n`);
        lastPlain = Date.now();
        lastText = text;
      }
    },
    began,
  };
}

export async function printBatchStatus(client: AgentClient, g: GlobalOptions, id: string): Promise<number> {
  const handle = client.client.workflow.getHandle(id);
  const d = await handle.describe();
  const status = temporalStatus(d);
  let summary: AgentBatchResult | undefined;
  if (status === 'completed') summary = (await handle.result()) as AgentBatchResult;
  const progress = status === 'running' ? await batchProgress(handle) : undefined;
  const url = uiLink(g, id);
  if (g.json) printJson({ workflowId: id, workflowType: BATCH_WORKFLOW_TYPE, temporalStatus: status, url, ...(progress ? { progress } : {}), ...(summary ? { result: summary } : {}) });
  else {
    const sink = stdoutSink();
    const lines = [`${id}  batch ${status}`];
    if (progress) lines.push(progressLine(progress, { ...sink, color: false }));
    if (summary) lines.push(`${summary.done}/${summary.total} done · ${summary.failed} failed · ${formatTokens(summary.tokens)} tokens · ${formatCost(summary.cost)} · continued-as-new ${summary.continuedAsNew}×`);
    lines.push(`Temporal UI: ${url}`);
    sink.write(`${lines.join('\n')}\n`);
  }
  if (status === 'running') return EXIT.ok;
  return summary && summary.failed === 0 ? EXIT.ok : EXIT.runFailed;
}

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
}

export function registerBatchCommand(program: Command): void {
  program
    .command('batch')
    .summary('run every task of a JSONL file as a durable batch, with a progress bar; results in input order')
    .description(
      'Each line of <tasks.jsonl> is an AgentRunInput (fields it lacks come from --model/--tools/--system/--max-turns) or a ' +
        'prompt string. Starts agentBatchWorkflow (children <batchId>-<index>, at most --concurrency at a time; it survives ' +
        'worker restarts and continues-as-new on its own), shows its progress, and writes one line per task, in input order, ' +
        'to --out (default stdout): { index, workflowId, status, finalText, usage, turns, error?, newMessages }. ' +
        'Exit code 0 when every task completed (or stopped), 1 when some failed. Ctrl-C stops following; `keel batch ' +
        '--attach <batchId> --out …` picks it up again.',
    )
    .argument('[tasks.jsonl]', 'task file (- for stdin)')
    .option('-c, --concurrency <n>', 'runs at a time', intOption('--concurrency'), 8)
    .option('-o, --out <results.jsonl>', 'result file (one JSON line per task, input order)')
    .option('--id <batchId>', 'batch workflow id (default keel-batch-<uuid>)')
    .option('--attach <batchId>', 'follow an existing batch instead of starting one')
    .option('--detach', 'start the batch, print its id and link, and return')
    .option('-m, --model <provider/model>', 'model of tasks that name none')
    .option('-t, --tools <names>', 'tools of tasks that name none (comma-separated)', commaList)
    .option('-s, --system <prompt>', 'system prompt of tasks that have none')
    .option('--max-turns <n>', 'maxTurns of tasks that set none', intOption('--max-turns'))
    .option('--no-messages', 'leave newMessages out of the result lines')
    .option('--page-size <n>', 'hand tasks to the batch by page reference, n per page (automatic above ~1 MB of tasks)', intOption('--page-size'))
    .option('--can-after-tasks <n>', 'continue-as-new after starting n children in one run (default: when history grows large)', intOption('--can-after-tasks'))
    .option('--can-after-events <n>', 'continue-as-new once one run has n history events (default 10000)', intOption('--can-after-events', 100))
    .action(
      act(async (file: string | undefined, o: BatchFlags, cmd: Command) => {
        const g = globals(cmd);
        if (!file && !o.attach) throw usageError('Give a task file (`keel batch tasks.jsonl`) or --attach <batchId>.');
        let tasks: AgentRunInput[] = [];
        if (!o.attach) {
          let text: string;
          try {
            text = readFileSync(file === '-' ? 0 : file!, 'utf8');
          } catch (err) {
            throw usageError(`${file}: ${(err as Error).message}`);
          }
          tasks = parseTasks(text, { model: o.model ?? process.env.KEEL_MODEL, tools: o.tools, system: o.system, maxTurns: o.maxTurns });
          if (tasks.length === 0) throw usageError(`${file}: no tasks`);
          if (tasks.length > MAX_TASKS) throw usageError(`${file}: ${tasks.length} tasks; one batch keeps a compact outcome per task, so split it into batches of at most ${MAX_TASKS}.`);
        }
        return withClient(g, async (client) => {
          const handle = o.attach
            ? client.client.workflow.getHandle(o.attach)
            : await startBatch(client, g.taskQueue, tasks, {
                batchId: o.id,
                concurrency: o.concurrency,
                pageSize: o.pageSize,
                continueAsNewAfterTasks: o.canAfterTasks,
                continueAsNewAfterEvents: o.canAfterEvents,
                summary: `batch of ${tasks.length} agent runs from ${file}`,
              });
          const id = handle.workflowId;
          const url = uiLink(g, id);
          if (o.attach) {
            const d = await handle.describe();
            if (d.type !== BATCH_WORKFLOW_TYPE) throw usageError(`${id} is a ${d.type}, not a batch`);
          }
          // status lines go to stderr when the results go to stdout
          const sink = o.out || o.detach ? stdoutSink() : stdoutSink(process.stderr);
          if (o.detach) {
            if (g.json) printJson({ workflowId: id, url });
            else sink.write(`${id}\n${url}\n`);
            return EXIT.ok;
          }
          if (!g.json) sink.write(`batch ${id}${tasks.length ? ` · ${tasks.length} tasks` : ''} · concurrency ${o.concurrency}\nTemporal UI: ${url}\n`);

          const fd = o.out ? openSync(o.out, 'w') : 1;
          const writer = new OrderedWriter(client, (line) => writeSync(fd, `${line}\n`), o.messages);
          const bar = progressPrinter(g.json ? { ...sink, tty: false, write: () => undefined } : sink);
          let stop = false;
          const onSigint = () => (stop = true);
          process.once('SIGINT', onSigint);
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
              if (stop) {
                if (sink.tty) sink.write('\n');
                sink.write(`Stopped following; the batch goes on. Resume with \`keel batch --attach ${id} --out …\`.\n`);
                return 130;
              }
              await sleep(250);
            }
            let summary: AgentBatchResult;
            try {
              summary = (await handle.result()) as AgentBatchResult;
            } catch (err) {
              if (sink.tty) sink.write('\n');
              throw new CliError(EXIT.runFailed, `Batch ${id} did not complete: ${(err as Error).message}\nTemporal UI: ${url}`);
            }
            await writer.finish(id, summary.total);
            const final: BatchProgress = { ...(last ?? ({} as BatchProgress)), total: summary.total, done: summary.done, failed: summary.failed, running: 0, queued: 0, tokens: summary.tokens, cost: summary.cost, continuedAsNew: summary.continuedAsNew, concurrency: o.concurrency, phase: 'finished' };
            bar.update(final, true);
            const ms = Date.now() - bar.began;
            if (g.json) printJson({ workflowId: id, url, ...summary, durationMs: ms, out: o.out ?? null });
            else
              sink.write(
                `${summary.failed === 0 ? '✔' : '✘'} ${summary.done}/${summary.total} done · ${summary.failed} failed · ${formatTokens(summary.tokens)} tokens · ${formatCost(summary.cost)} · ` +
                  `${formatDuration(ms)} · ${((summary.total / ms) * 60_000).toFixed(0)} tasks/min · continued-as-new ${summary.continuedAsNew}×\n` +
                  `${o.out ? `Results: ${o.out}\n` : ''}Temporal UI: ${url}\n`,
              );
            return summary.failed === 0 ? EXIT.ok : EXIT.runFailed;
          } finally {
            process.off('SIGINT', onSigint);
            if (o.out) closeSync(fd);
          }
        });
      }),
    );
}
