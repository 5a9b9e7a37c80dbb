/**
 * The flags of a worker started by the CLI (`keel dev`, `keel worker`, and `keel tools`, which lists what such a worker
 * would offer): workspace and sandbox, tools modules, MCP files, scripted models, approvals, concurrency, versioning.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { WORKER_ROLES, type WorkerRole } from '../common/task-queues.js';
import type { WorkerModuleFlags } from '../worker/load-modules.js';
import { approvalOptions, type ApprovalFlags } from '../worker/approvals/flags.js';
import { commaList, intOption } from './context.js';
import { parseLimitSpec } from '../common/limits/definition.js';

export interface WorkerFlags extends ApprovalFlags, WorkerModuleFlags {
  /** `--approve bash,write`: tools whose every call waits for approval. */
  approve?: string[];
  maxConcurrentActivities?: number;
  maxConcurrentWorkflowTasks?: number;
  buildId?: string;
  deploymentName?: string;
  /** commander's `--no-make-current` */
  makeCurrent?: boolean;
  /** `--provider-limit anthropic:rpm=60,itpm=100000`, repeatable (docs/provider-limits.md). */
  providerLimit?: string[];
}

/** One `--provider-limit` value, checked at once (a usage error saying how to write it). */
function limitOption(value: string, previous: string[] = []): string[] {
  try {
    parseLimitSpec(value);
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
  return [...previous, value];
}

/** `--role`: one of the worker roles, else a usage error listing them. */
export function roleOption(value: string): WorkerRole {
  if ((WORKER_ROLES as readonly string[]).includes(value)) return value as WorkerRole;
  throw new InvalidArgumentError(`--role must be one of ${WORKER_ROLES.join(', ')}.`);
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** Adds every worker flag (and the approvals flags) to `cmd`. */
export function workerOptions(cmd: Command): Command {
  return approvalOptions(cmd)
    .option(
      '--workspace <dir>',
      'one workspace every run shares for the built-in tools (read, write, edit, bash, grep, find, ls) (default: ' +
        '$KEEL_WORKSPACE; without either, each conversation gets its own under --workspace-root)',
    )
    .option(
      '--workspace-root <dir>',
      "where each conversation's workspace is made (default: $KEEL_WORKSPACE_ROOT, else <tmpdir>/keel-workspaces-<uid>); " +
        'removed an hour after the conversation closed',
    )
    .option(
      '--sandbox <bwrap|none>',
      'how tool processes (bash, rg, fd) and stdio MCP servers run: bwrap (default; the worker refuses to start where ' +
        'it cannot) or none (unsandboxed, announced) (default: $KEEL_SANDBOX)',
    )
    .option(
      '--network <none|host>',
      "network of sandboxed tool processes: none (default) or the host's (default: $KEEL_SANDBOX_NETWORK)",
    )
    .option('--no-builtin', 'do not register the built-in tools')
    .option(
      '--approve <tools>',
      'comma-separated tools whose every call waits for approval (`keel pending` / `keel approve`), e.g. bash,write,edit; repeatable',
      commaList,
    )
    .option(
      '--tools-module <file>',
      'a .ts/.js module exporting `tools` (defineTool results), `agents` (defineAgent results: sub-agents) and/or `graders` (defineGrader results) to register; repeatable',
      collect,
    )
    .option(
      '--mcp <config.json>',
      'MCP servers whose tools runs may name as <server>__<tool> or <server>__*: a file { "mcpServers": { "<name>": ' +
        '{ "command", "args" } | { "url" } } } (README "MCP servers"); repeatable',
      collect,
    )
    .option(
      '--provider-limit <spec>',
      "limits shared by every run of the task queue for a provider or model pattern: '<key>:rpm=60,itpm=100000,otpm=20000,concurrent=10' (docs/provider-limits.md); repeatable",
      limitOption,
    )
    .option('--scripts <file.json>', 'named scripted models: { "<name>": { "rules": [...] } } → model scripted/<name>')
    .option(
      '--max-concurrent-activities <n>',
      'activities (model and tool calls) run at once by this worker',
      intOption('--max-concurrent-activities'),
    )
    .option(
      '--max-concurrent-workflow-tasks <n>',
      'workflow tasks run at once by this worker',
      intOption('--max-concurrent-workflow-tasks'),
    )
    .option(
      '--build-id <id>',
      "this worker's build in the deployment (default: $KEEL_BUILD_ID, else <package version>+<git sha>)",
    )
    .option('--deployment-name <name>', 'Worker Deployment name', 'keel')
    .option(
      '--no-make-current',
      "do not make this build the deployment's current version (roll out with `temporal worker deployment set-current-version`)",
    );
}

/** The worker options that change what `keel tools` lists (the others are accepted and hidden from its help). */
export const TOOLS_OPTIONS = ['--no-builtin', '--tools-module', '--mcp', '--approve', '--sandbox', '--help'];

/** Hides from `cmd`'s help every option not named in `shown` (they are still accepted). */
export function hideOptionsExcept(cmd: Command, shown: string[]): void {
  for (const option of cmd.options) if (!shown.includes(option.long ?? '')) option.hideHelp();
}
