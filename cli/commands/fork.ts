/**
 * `keel fork <id> --turn N [--prompt …] [--model …] [--system …]` and `keel rewind <id> --turn N [--prompt …]`
 * (issue 37 item 2; docs/runs.md#fork-and-rewind): a new run from the first N turns of a run, beside it (fork) or in
 * place of an idle session under its conversation id (rewind). Each prints the run's id, what to run next and its UI link.
 */
import type { Command } from 'commander';
import type { AgentClient, AgentRunHandle } from '../../client/agent-client.js';
import { InvalidForkError, type ForkOptions } from '../../client/fork/plan-fork.js';
import { forkLine } from '../../common/fork.js';
import { act, EXIT, globals, intOption, printJson, uiLink, usageError, withClient } from '../context.js';
import { pasteable } from './batch.js';

interface ForkFlags {
  turn: number;
  prompt?: string;
  model?: string;
  system?: string;
  id?: string;
}

export function register(program: Command): void {
  program
    .command('fork <workflowId>')
    .summary('start a new run from the first N turns of a run (the run itself is not touched)')
    .description(
      'Starts a new run whose transcript is the first --turn N turns of <workflowId> (a turn is one model call, numbered ' +
        'as `keel watch` numbers them), with its configuration unless --model or --system say otherwise. Without ' +
        '--prompt the messages that opened turn N+1 come too, so the fork sends the model what the run sent at turn N+1; ' +
        'with --prompt that message goes there instead. The fork is summarised `forked from <id> at turn N`; ' +
        '`keel list --forks-of <id>` lists the forks of a run. Prints the fork’s id and the command to follow it.',
    )
    .requiredOption('--turn <n>', 'fork after this turn (0: before the first)', intOption('--turn', 0))
    .option('--prompt <text>', 'a new user message after turn N (instead of what opened turn N+1)')
    .option('-m, --model <provider/model>', 'another model (default the run’s)')
    .option('-s, --system <prompt>', 'another system prompt (default the run’s)')
    .option('--id <workflowId>', 'the fork’s workflow id (default <workflowId>-fork-<8 hex>)')
    .action(act((id: string, o: ForkFlags, cmd: Command) => branch(cmd, id, o, 'fork')));
  program
    .command('rewind <workflowId>')
    .summary('take an open session back to turn N under the same id (it ends; a new run goes on from there)')
    .description(
      'Rewinds the open session <workflowId> to --turn N: ends it (as `keel end`: a running agent run finishes first; ' +
        'its history stays as it was) and starts a new run under the same workflow id from its first N turns, which ' +
        'answers --prompt or waits for the next message (`keel send <id> …`, or your service’s next message to the ' +
        'conversation).',
    )
    .requiredOption('--turn <n>', 'rewind to after this turn (0: before the first)', intOption('--turn', 0))
    .option('--prompt <text>', 'the next user message, answered at once')
    .action(act((id: string, o: ForkFlags, cmd: Command) => branch(cmd, id, o, 'rewind')));
}

/** Starts the fork or the rewound session and prints its id, the next command and the UI link. */
async function branch(cmd: Command, id: string, o: ForkFlags, verb: 'fork' | 'rewind'): Promise<number> {
  const g = globals(cmd);
  const opts: ForkOptions = {
    atTurn: o.turn,
    ...(o.prompt !== undefined ? { prompt: o.prompt } : {}),
    ...(o.model !== undefined ? { model: o.model } : {}),
    ...(o.system !== undefined ? { system: o.system } : {}),
    ...(o.id !== undefined ? { workflowId: o.id } : {}),
  };
  return withClient(g, async (client) => {
    const handle = await started(client, id, opts, verb);
    const d = await handle.workflow.describe();
    // a rewound session without a prompt waits: what it needs next is a message
    const next = pasteable(
      cmd,
      verb === 'rewind' && o.prompt === undefined
        ? ['send', handle.workflowId, '<your next message>']
        : ['watch', handle.workflowId],
    );
    const url = uiLink(g, handle.workflowId);
    const line = forkLine({ workflowId: id, runId: '', atTurn: o.turn });
    if (g.json) printJson({ workflowId: handle.workflowId, runId: d.runId, forkedFrom: id, atTurn: o.turn, next, url });
    else
      process.stdout.write(
        `${handle.workflowId}\n${verb === 'fork' ? line : `rewound ${id} to turn ${o.turn}`}\nnext: ${next}\n${url}\n`,
      );
    return EXIT.ok;
  });
}

async function started(
  client: AgentClient,
  id: string,
  opts: ForkOptions,
  verb: 'fork' | 'rewind',
): Promise<AgentRunHandle> {
  try {
    return verb === 'fork' ? await client.getHandle(id).fork(opts) : await client.rewind(id, opts);
  } catch (err) {
    if (err instanceof InvalidForkError) throw usageError(err.message);
    throw err;
  }
}
