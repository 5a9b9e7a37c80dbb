/**
 * Options that `keel batch`, `keel batch retry` and `keel schedule create` share: the task defaults (what a task that
 * names none of them gets) and the budget flags, with the parser of `--max-cost-usd`.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { commaList, intOption } from '../context.js';
import { DEFAULT_MODEL } from '../commands/run.js';

/** `--max-cost-usd`: US dollars, a finite number > 0. */
export function usdOption(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !Number.isFinite(n) || n <= 0)
    throw new InvalidArgumentError('--max-cost-usd must be a number > 0 (US dollars, e.g. 2.5).');
  return n;
}

/** Adds `-m/--model`, `-t/--tools`, `-s/--system` and `--max-turns`: the defaults of tasks that set none. */
export function taskDefaultOptions(cmd: Command): Command {
  return cmd
    .option(
      '-m, --model <provider/model>',
      `model of tasks that name none (default $KEEL_MODEL, else ${DEFAULT_MODEL})`,
    )
    .option('--tools <names>', 'tools of tasks that name none (comma-separated)', commaList)
    .option('-s, --system <prompt>', 'system prompt of tasks that have none')
    .option('--max-turns <n>', 'maxTurns of tasks that set none', intOption('--max-turns'));
}

/** Adds `--max-tokens`, `--max-cost-usd` and `--max-model-calls` (read with `budgetFromFlags`), with these help texts. */
export function budgetOptions(cmd: Command, help: { tokens: string; costUsd: string; modelCalls: string }): Command {
  return cmd
    .option('--max-tokens <n>', help.tokens, intOption('--max-tokens'))
    .option('--max-cost-usd <usd>', help.costUsd, usdOption)
    .option('--max-model-calls <n>', help.modelCalls, intOption('--max-model-calls'));
}
