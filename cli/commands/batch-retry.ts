/**
 * `keel batch retry <batchId>`, `keel batch results <batchId> [--merge]` and `keel batch describe <batchId>`: a new
 * batch of just the tasks that failed, linked to the first by its id (`<batchId>-retry-<k>`) and its memo, and one
 * result file in input order with the retried tasks' results in place of the failed ones (client/batch-retry.ts).
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  BatchRetryError,
  batchOutcomes,
  DEFAULT_RETRY_STATUSES,
  statusPhrase,
  type RetryStatus,
  mergedOutcomes,
  retriesOf,
  RETRY_MEMO_KEY,
  startRetryBatch,
  type BatchRetryMemo,
} from '../../client/batch-retry.js';
import { act, EXIT, globals, intOption, printJson, uiLink, usageError, withClient } from '../context.js';
import { budgetFromFlags, pasteable } from './batch.js';
import { budgetOptions } from '../batch/options.js';
import { countsText, outcomeCounts, printBatchStatus } from '../batch/progress.js';
import { resultLine } from '../batch/results.js';

const STATUSES: RetryStatus[] = ['completed', 'stopped', 'failed', 'cancelled', 'queued'];

function statusList(value: string): RetryStatus[] {
  const list = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const bad = list.filter((s) => !STATUSES.includes(s as RetryStatus));
  if (list.length === 0 || bad.length)
    throw new InvalidArgumentError(
      `--status takes a comma-separated list of ${STATUSES.join(', ')} (queued: never started).`,
    );
  return list as RetryStatus[];
}

/** `1, 3, 4` (the first 20, then `… and n more`). */
function indexList(indices: number[]): string {
  const shown = indices.slice(0, 20).join(', ');
  return indices.length > 20 ? `${shown} … and ${indices.length - 20} more` : shown;
}

/**
 * The value of a subcommand's option. Commander parses the options of `keel batch` (the parent) before its subcommand
 * sees them, so an option both have (`--out`, `--no-messages`, `--concurrency`, the budget) lands on `batch` when given
 * on the command line; its value is taken from there then.
 */
function flag<T>(cmd: Command, name: string): T | undefined {
  const own = cmd.getOptionValueSource(name);
  if (own === 'cli') return cmd.getOptionValue(name) as T;
  const parent = cmd.parent;
  if (parent?.getOptionValueSource(name) === 'cli') return parent.getOptionValue(name) as T;
  return cmd.getOptionValue(name) as T | undefined;
}

/** A refusal of client/batch-retry.ts as a usage error. */
function refused<T>(p: Promise<T>): Promise<T> {
  return p.catch((err: unknown) => {
    throw err instanceof BatchRetryError ? usageError(err.message) : err;
  });
}

interface RetryFlags {
  status: RetryStatus[];
}

export function registerBatchRetryCommands(batch: Command): void {
  registerRetry(batch);
  registerResults(batch);
  registerDescribe(batch);
}

/** `keel batch retry`. */
function registerRetry(batch: Command): void {
  const cmd = batch
    .command('retry')
    .summary('start a new batch of just the tasks of a finished batch that failed (linked to it)')
    .description(
      'Starts <batchId>-retry-<k> (the next free k) with the tasks of <batchId> whose latest outcome — over the batch and ' +
        'its earlier retries — has one of --status (default: every task without a result — failed, cancelled, and ' +
        'queued: never started because the batch closed first, e.g. was cancelled), with the same task definitions and the ' +
        'batch’s options (concurrency, task queue, budget as a fresh pool) unless given here. The retry records ' +
        '{ retryOf, indices } in its memo (keelRetryOf); `keel batch describe <batchId>` lists the retries, and ' +
        '`keel batch results <batchId> --merge` writes one result file with the retried tasks’ results in place. ' +
        'Needs a worker (the outcomes are read with the batch’s `results` query).',
    )
    .argument('<batchId>', 'the first batch (not a retry)');
  retryOptions(cmd).action(act(startRetry));
}

/** The options of `keel batch retry`, in `--help` order. */
function retryOptions(cmd: Command): Command {
  return budgetOptions(
    cmd
      .addOption(
        new Option(
          '--status <statuses>',
          `retry tasks with these outcomes (comma-separated: ${STATUSES.join(', ')}; queued = never started)`,
        )
          .argParser(statusList)
          .default([...DEFAULT_RETRY_STATUSES], DEFAULT_RETRY_STATUSES.join(',')),
      )
      .option('-c, --concurrency <n>', 'runs at a time (default: the batch’s)', intOption('--concurrency')),
    {
      tokens: 'budget of the retry (default: the batch’s, as a fresh pool)',
      costUsd: 'budget of the retry: US dollars',
      modelCalls: 'budget of the retry: model requests',
    },
  );
}

/** `keel batch retry`'s action: start the retry batch and say how to follow and merge it. */
async function startRetry(batchId: string, o: RetryFlags, cmd: Command): Promise<number> {
  const g = globals(cmd);
  const concurrency = flag<number>(cmd, 'concurrency');
  const budget = budgetFromFlags({
    maxTokens: flag(cmd, 'maxTokens'),
    maxCostUsd: flag(cmd, 'maxCostUsd'),
    maxModelCalls: flag(cmd, 'maxModelCalls'),
  });
  return withClient(g, async (client) => {
    const { handle, memo } = await refused(
      startRetryBatch(client.client, batchId, {
        statuses: o.status,
        ...(concurrency !== undefined ? { concurrency } : {}),
        ...(budget ? { budget } : {}),
      }),
    );
    const id = handle.workflowId;
    if (g.json) {
      printJson({ workflowId: id, retryOf: batchId, indices: memo.indices, url: uiLink(g, id) });
      return EXIT.ok;
    }
    process.stdout.write(
      `Retry ${id} of ${batchId}: ${memo.indices.length} task(s) that were ${statusPhrase(o.status)} (${indexList(memo.indices)})\n` +
        `Temporal UI: ${uiLink(g, id)}\n` +
        `Follow it with: ${pasteable(cmd, ['batch', '--attach', id])}\n` +
        `Then merge: ${pasteable(cmd, ['batch', 'results', batchId, '--merge', '--out', 'results.jsonl'])}\n`,
    );
    return EXIT.ok;
  });
}

/** `keel batch results`. */
function registerResults(batch: Command): void {
  batch
    .command('results')
    .summary('write the result lines of a finished batch, in input order (--merge: with its retries’ results)')
    .description(
      'One JSON line per task of <batchId>, in input order, to --out (default stdout), as `keel batch` writes them. ' +
        'With --merge, each task retried by `keel batch retry` has the line of its latest retry instead (its `index` ' +
        'stays the one in <batchId>; `workflowId` names the child that ran it). Refused while the batch or a retry runs.',
    )
    .argument('<batchId>', 'the first batch')
    .option('--merge', 'replace retried tasks’ lines by their latest retry’s')
    .option('--out <results.jsonl>', 'result file')
    .option('--no-messages', 'leave newMessages out of the result lines')
    .action(act(printResults));
}

/** `keel batch describe`. */
function registerDescribe(batch: Command): void {
  batch
    .command('describe')
    .summary('a batch’s state and summary, and its retries (or the batch it retries)')
    .argument('<batchId>')
    .action(act(describeBatch));
}

/** `keel batch results`: the batch's result lines (merged with its retries' with --merge). */
async function printResults(batchId: string, opts: { merge?: boolean }, cmd: Command) {
  const g = globals(cmd);
  const o = { ...opts, out: flag<string>(cmd, 'out'), messages: flag<boolean>(cmd, 'messages') !== false };
  return withClient(g, async (client) => {
    const outcomes = o.merge
      ? (await refused(mergedOutcomes(client.client, batchId))).outcomes
      : await (async () => {
          const handle = client.client.workflow.getHandle(batchId);
          if ((await handle.describe()).status.name === 'RUNNING')
            throw usageError(
              `Batch ${batchId} is still running; follow it with: ${pasteable(cmd, ['batch', '--attach', batchId])}`,
            );
          return batchOutcomes(handle);
        })();
    const fd = o.out ? openSync(o.out, 'w') : 1;
    try {
      // a few children read at a time, written in order
      for (let i = 0; i < outcomes.length; i += 16) {
        const lines = await Promise.all(
          outcomes.slice(i, i + 16).map((r) => resultLine(client, r, o.messages, r.index)),
        );
        for (const line of lines) writeSync(fd, `${line}\n`);
      }
    } finally {
      if (o.out) closeSync(fd);
    }
    // a task that never started (its batch was cancelled) is not done: it counts apart, and fails the exit code
    const counts = outcomeCounts(outcomes);
    if (o.out)
      process.stderr.write(`${countsText(counts)}${o.merge ? ' (merged with retries)' : ''} · Results: ${o.out}\n`);
    return counts.done === counts.total ? EXIT.ok : EXIT.runFailed;
  });
}

/** `keel batch describe`: the batch and its retries. */
async function describeBatch(batchId: string, _o: unknown, cmd: Command) {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    const d = await client.client.workflow.getHandle(batchId).describe();
    const memo = d.memo?.[RETRY_MEMO_KEY] as BatchRetryMemo | undefined;
    if (memo)
      return printBatchStatus(client, g, batchId, {
        json: { retryOf: memo.retryOf, indices: memo.indices },
        lines: [`retry of ${memo.retryOf}: its tasks ${indexList(memo.indices)}`],
      });
    const retries = await retriesOf(client.client, batchId);
    return printBatchStatus(client, g, batchId, {
      json: {
        retries: retries.map((r) => ({ workflowId: r.workflowId, status: r.status, indices: r.memo.indices })),
      },
      lines: retries.length
        ? retries.map((r) => `retried in ${r.workflowId} (${r.status}): tasks ${indexList(r.memo.indices)}`)
        : [],
    });
  });
}
