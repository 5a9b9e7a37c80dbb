/**
 * The `keel` command line (docs/cli.md). `bin/keel.mjs` loads this file (compiled from dist/, else through tsx).
 * One file per command in commands/ (`keel dev`, `worker`, `tools`, `demo`, `run`, `batch`, `schedule`, `list`, …), each
 * with its `register(program)`; what they share (options, connection, exit codes, rendering, a run's outcome) is
 * beside this file, a run's helpers in run/, a batch's in batch/.
 *
 * Exit codes: 0 done, 1 run failed, 2 usage error, 3 cannot reach Temporal.
 */
import { Command, CommanderError, Option } from 'commander';
import { DEFAULT_ADDRESS } from '../node-common/connection.js';
import { addConnectionOptions, classify, DEFAULT_UI, EXIT } from './context.js';
import { DEFAULT_TASK_QUEUE } from '../common/task-queues.js';
import * as approvalsCommand from './commands/approvals.js';
import * as batch from './commands/batch.js';
import * as controlCommand from './commands/control.js';
import * as encryptionCommand from './commands/encryption.js';
import * as inspectCommand from './commands/inspect.js';
import * as listCommand from './commands/list.js';
import * as limitsCommand from './commands/limits.js';
import * as schedule from './commands/schedule.js';
import * as runCommand from './commands/run.js';
import * as dev from './commands/dev.js';
import * as worker from './commands/worker.js';
import * as tools from './commands/tools.js';
import * as demo from './commands/demo.js';
import * as forkCommand from './commands/fork.js';
import * as replayCommand from './commands/replay.js';
import { packageVersion } from '../node-common/package-version.js';

/** The last line of every subcommand's help. */
export const GLOBAL_OPTIONS_LINE =
  'Global options (--address, --namespace, --task-queue, --ui, --json, TLS and API key): see `npx keel --help`; give them before or after the command.';

export function buildProgram(): Command {
  const program = addConnectionOptions(
    new Command('keel')
      .description('Keel: the Pi agent loop, durably on Temporal. Start, follow, steer and inspect agent runs.')
      .version(packageVersion(), '-V, --version')
      .addOption(
        new Option('--address <host:port>', `Temporal frontend (default $TEMPORAL_ADDRESS or ${DEFAULT_ADDRESS})`),
      )
      .addOption(new Option('-n, --namespace <ns>', 'Temporal namespace (default $TEMPORAL_NAMESPACE or default)'))
      .addOption(
        new Option(
          '-t, --task-queue <name>',
          `task queue of runs and workers (default $KEEL_TASK_QUEUE or ${DEFAULT_TASK_QUEUE})`,
        ),
      )
      .addOption(
        new Option(
          '--ui <url>',
          `Temporal Web UI base for links (default $KEEL_UI_URL, else the UI of the \`keel dev\` serving --address, else ${DEFAULT_UI})`,
        ),
      )
      .addOption(new Option('--json', 'machine-readable output (JSON) for scripts'))
      .addOption(new Option('--connect-timeout <seconds>', 'how long to wait for Temporal').default('10').hideHelp()),
  )
    .showHelpAfterError('(run with --help for usage)')
    .addHelpText(
      'after',
      '\nExit codes: 0 done, 1 run failed, 2 usage error, 3 cannot reach Temporal.\n' +
        'Start here: `npx keel dev` (local Temporal + UI + worker), then `npx keel run "…" --model …`.',
    );
  dev.register(program);
  worker.register(program);
  tools.register(program);
  demo.register(program);
  runCommand.register(program);
  controlCommand.register(program);
  approvalsCommand.register(program);
  inspectCommand.register(program);
  listCommand.register(program);
  forkCommand.register(program);
  replayCommand.register(program);
  limitsCommand.register(program);
  batch.register(program);
  encryptionCommand.register(program);
  schedule.register(program);
  // the connection and output options are listed once, in `keel --help`; each command's help points there
  const globalLine = (cmd: Command) => {
    cmd.addHelpText('after', `\n${GLOBAL_OPTIONS_LINE}`);
    cmd.commands.forEach(globalLine); // `keel batch retry`, `keel schedule create`, …
  };
  program.commands.forEach(globalLine);
  // every command's own --help says what it does: its summary, as a sentence, unless it has a longer description
  const described = (cmd: Command) => {
    if (!cmd.description() && cmd.summary()) cmd.description(asSentence(cmd.summary()));
    cmd.commands.forEach(described);
  };
  program.commands.forEach(described);
  // commander exits by itself on usage errors: make them exit code 2 (help and --version stay 0)
  const override = (cmd: Command) => {
    cmd.exitOverride();
    cmd.commands.forEach(override);
  };
  override(program);
  return program;
}

/** `start a run` → `Start a run.` */
function asSentence(text: string): string {
  const capital = `${text.charAt(0).toUpperCase()}${text.slice(1)}`;
  return /[.!?)]$/.test(capital) ? capital : `${capital}.`;
}

export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return EXIT.ok;
      return EXIT.usage; // commander already printed the message
    }
    const opts = program.opts<{ address?: string }>();
    const e = classify(err, { address: opts.address ?? process.env.TEMPORAL_ADDRESS ?? DEFAULT_ADDRESS });
    process.stderr.write(`keel: ${e.message}\n`);
    if (process.env.KEEL_DEBUG && err instanceof Error && err.stack) process.stderr.write(`${err.stack}\n`);
    return e.exitCode;
  }
}
