/**
 * `keel dev` (Temporal dev server with a persistent SQLite file + Web UI + an in-process worker), `keel worker`
 * (a worker only) and `keel demo` (the seed demo, as `npm run demo`).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { GraderDefinition } from '../../activities/graders.js';
import type { AgentDefinition } from '../../activities/agents/define-agent.js';
import type { ToolDefinition } from '../../activities/tools/define-tool.js';
import type { ModelRegistry } from '../../activities/model/provider.js';
import type { Script } from '../../activities/model/scripted.js';
import { resolveConnection, type ConnectionSettings } from '../../common/connection.js';
import type { KeyRing } from '../../common/encryption.js';
import { DEFAULT_TASK_QUEUE, WORKER_ROLES, type WorkerRole } from '../../common/task-queues.js';
import { InvalidArgumentError, Option, type Command } from 'commander';
import {
  act,
  CliError,
  commaList,
  EXIT,
  globals,
  intOption,
  usageError,
  type GlobalOptions,
  shellWord,
} from '../context.js';
import { recordDevServer } from '../dev-registry.js';
import { ResourceInUseError } from '../../client/resource-holder.js';
import { defaultWorkspaceRoot } from '../../activities/tools/builtin/run-workspaces.js';
import type { SandboxSetting } from '../../activities/tools/builtin/sandbox.js';
import type { CodecServer } from '../../client/codec-server.js';
import type { ServerLogLevel } from '../../dev/dev-server.js';
import {
  approvalOptions,
  approvalsFromFlags,
  withApproval,
  type ApprovalFlags,
} from '../../client/cli/approval-flags.js';
import type { McpServers } from '../../activities/mcp/config.js';

interface WorkerFlags extends ApprovalFlags {
  workspace?: string;
  workspaceRoot?: string;
  sandbox?: string;
  network?: string;
  toolsModule?: string[];
  scripts?: string;
  builtin?: boolean;
  /** `--approve bash,write`: tools whose every call waits for approval. */
  approve?: string[];
  maxConcurrentActivities?: number;
  maxConcurrentWorkflowTasks?: number;
  buildId?: string;
  deploymentName?: string;
  /** commander's `--no-make-current` */
  makeCurrent?: boolean;
  /** `keel worker --role` (README "Worker roles"); `keel dev` is always `all`. */
  role?: WorkerRole;
  /** `--mcp <config.json>` files in the `{ "mcpServers": { … } }` format; repeatable. */
  mcp?: string[];
}

/** The MCP servers of every `--mcp` file (README "MCP servers"); a bad file is a usage error naming it. */
async function loadMcpServers(flags: WorkerFlags): Promise<McpServers | undefined> {
  if (!flags.mcp?.length) return undefined;
  const { loadMcpConfig } = await import('../../activities/mcp/config.js');
  const servers: McpServers = {};
  for (const file of flags.mcp) {
    let loaded: McpServers;
    try {
      loaded = loadMcpConfig(resolve(file));
    } catch (err) {
      throw usageError((err as Error).message); // names the file and every problem in it
    }
    for (const name of Object.keys(loaded))
      if (name in servers) throw usageError(`--mcp ${file}: the MCP server "${name}" is named in two --mcp files`);
    Object.assign(servers, loaded);
  }
  // --sandbox none: the stdio servers run unsandboxed too (announced when they are created), unless one says otherwise
  if (sandboxSetting(flags) === 'none')
    for (const [name, s] of Object.entries(servers))
      if ('command' in s && s.sandbox === undefined) servers[name] = { ...s, sandbox: false };
  const { mcpSandboxRefusal } = await import('../../activities/mcp/sandbox.js');
  const refusal = mcpSandboxRefusal(servers);
  if (refusal) throw new CliError(EXIT.usage, refusal);
  return servers;
}

/** The workspace every run shares when one is configured (--workspace, else $KEEL_WORKSPACE); else one per conversation. */
function sharedWorkspace(flags: WorkerFlags): string | undefined {
  const dir = flags.workspace ?? (process.env.KEEL_WORKSPACE || undefined);
  return dir === undefined ? undefined : resolve(dir);
}

/** --sandbox (or $KEEL_SANDBOX): bwrap (default) or none; --network (or $KEEL_SANDBOX_NETWORK): none (default) or host. */
function sandboxSetting(flags: WorkerFlags): SandboxSetting {
  const sandbox = flags.sandbox ?? (process.env.KEEL_SANDBOX || 'bwrap');
  if (sandbox !== 'bwrap' && sandbox !== 'none') throw usageError(`--sandbox must be bwrap or none, got ${sandbox}`);
  const network = flags.network ?? (process.env.KEEL_SANDBOX_NETWORK || 'none');
  if (network !== 'none' && network !== 'host') throw usageError(`--network must be none or host, got ${network}`);
  return sandbox === 'none' ? 'none' : { network };
}

/** Where the built-in tools work and how their processes run, for the worker's start line. */
function describeTools(flags: WorkerFlags): string {
  if (flags.role === 'model') return 'runs no tool';
  if (flags.builtin === false) {
    const shared = sharedWorkspace(flags);
    return shared ? `workspace ${shared}` : 'no built-in tools';
  }
  const shared = sharedWorkspace(flags);
  const where = shared
    ? `workspace ${shared} (shared by every run)`
    : `a workspace per conversation under ${resolve(flags.workspaceRoot ?? defaultWorkspaceRoot())}`;
  const sandbox = sandboxSetting(flags);
  const how =
    sandbox === 'none'
      ? 'sandbox NONE (tool processes run unsandboxed as this user)'
      : `sandbox bwrap (network ${typeof sandbox === 'object' ? (sandbox.network ?? 'none') : 'none'})`;
  return `${where}, ${how}`;
}

function roleOption(value: string): WorkerRole {
  if ((WORKER_ROLES as readonly string[]).includes(value)) return value as WorkerRole;
  throw new InvalidArgumentError(`--role must be one of ${WORKER_ROLES.join(', ')}.`);
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/**
 * A shared workspace must not hold Keel's own data (README "What a tool can reach"): `.keel/` of the working directory,
 * the payload store's directory, the dev server's database. Throws a usage error naming what it holds.
 */
function refuseKeelDataInside(workspace: string, flags: WorkerFlags & { db?: string }): void {
  const data = [
    resolve('.keel'), // the payload store's default directory, .keel/payloads, and keel dev's .keel/dev.db
    ...(process.env.KEEL_PAYLOAD_DIR ? [resolve(process.env.KEEL_PAYLOAD_DIR)] : []),
    ...(flags.db ? [resolve(flags.db)] : []),
  ];
  const inside = data.filter((path) => {
    const rel = relative(workspace, path);
    return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
  });
  if (inside.length > 0)
    throw usageError(
      `--workspace ${workspace} holds Keel's own data (${inside.join(', ')}), which a tool could then read or change. ` +
        'Leave out --workspace (each conversation gets a workspace of its own), or name a directory that does not hold it.',
    );
}

/** Tools: the built-in seven on the workspace (unless --no-builtin) plus every `--tools-module`'s export. */
async function loadTools(flags: WorkerFlags): Promise<ToolDefinition[]> {
  const { builtinTools } = await import('../../activities/tools/builtin/index.js');
  const workspace = sharedWorkspace(flags);
  if (workspace !== undefined && !existsSync(workspace)) throw usageError(`--workspace ${workspace} does not exist`);
  if (workspace !== undefined && flags.builtin !== false) refuseKeelDataInside(workspace, flags);
  let tools: ToolDefinition[] = [];
  if (flags.builtin !== false) {
    try {
      tools = builtinTools({
        ...(workspace !== undefined ? { cwd: workspace } : {}),
        workspaces: flags.workspaceRoot ? { root: resolve(flags.workspaceRoot) } : {},
        // a model worker registers the tools for their schemas and never runs them: no sandbox to check
        ...(flags.role === 'model' ? { definitionsOnly: true } : { sandbox: sandboxSetting(flags) }),
      });
    } catch (err) {
      if (err instanceof CliError) throw err;
      throw new CliError(EXIT.usage, (err as Error).message); // no sandbox here: says what to do
    }
  }
  for (const file of flags.toolsModule ?? []) {
    const path = resolve(file);
    if (!existsSync(path)) throw usageError(`--tools-module ${file}: no such file`);
    let mod: { default?: unknown; tools?: unknown; graders?: unknown; agents?: unknown };
    try {
      mod = (await import(pathToFileURL(path).href)) as typeof mod;
    } catch (err) {
      // a syntax error (or a throw at load) names the option and the file, not only the compiler's words
      throw usageError(`--tools-module ${file}: could not load it: ${(err as Error).message}`);
    }
    const list = Array.isArray(mod.tools) ? mod.tools : Array.isArray(mod.default) ? mod.default : undefined;
    if (!list && (Array.isArray(mod.graders) || Array.isArray(mod.agents))) continue; // graders / agents only
    if (!list)
      throw usageError(
        `--tools-module ${file} must export \`tools\` (or a default export): an array of defineTool(...) results`,
      );
    tools.push(...(list as ToolDefinition[]));
  }
  return withApproval(tools, flags.approve ?? []);
}

/** Graders: every `--tools-module`'s `graders` export (defineGrader results), for graded batches. */
function loadGraders(flags: WorkerFlags): Promise<GraderDefinition[]> {
  return moduleArrays<GraderDefinition>(flags, 'graders', 'defineGrader');
}

/** Sub-agents: every `--tools-module`'s `agents` export (defineAgent results), README "Sub-agents". */
function loadAgents(flags: WorkerFlags): Promise<AgentDefinition[]> {
  return moduleArrays<AgentDefinition>(flags, 'agents', 'defineAgent');
}

/** The `name` exports of every `--tools-module` that has one, each an array of `maker(...)` results, concatenated. */
async function moduleArrays<T>(flags: WorkerFlags, name: 'graders' | 'agents', maker: string): Promise<T[]> {
  const out: T[] = [];
  for (const file of flags.toolsModule ?? []) {
    const value = ((await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>)[name];
    if (value === undefined) continue;
    if (!Array.isArray(value))
      throw usageError(`--tools-module ${file}: \`${name}\` must be an array of ${maker}(...) results`);
    out.push(...(value as T[]));
  }
  return out;
}

/** `scripted/hello`, always registered by `keel dev` and `keel worker`: what the hint `keel dev` prints runs. */
export const HELLO_SCRIPT: Script = {
  rules: [{ text: 'Hello from Keel: a scripted model answered (offline, no API key).' }],
};

/**
 * Models: scripted (`scripted/hello`, named scripts from --scripts, and rule files by path) and pi-ai for every other
 * provider.
 */
async function loadModels(flags: WorkerFlags): Promise<ModelRegistry> {
  const { scriptedModel } = await import('../../activities/model/scripted.js');
  const { piAiProvider } = await import('../../activities/model/pi-ai.js');
  let scripts: Record<string, Script> = { hello: HELLO_SCRIPT };
  if (flags.scripts) {
    try {
      scripts = {
        ...scripts,
        ...(JSON.parse(readFileSync(resolve(flags.scripts), 'utf8')) as Record<string, Script>),
      };
    } catch (err) {
      throw usageError(`--scripts ${flags.scripts}: ${(err as Error).message}`);
    }
  }
  return { scripted: scriptedModel(scripts), '*': piAiProvider() };
}

/** The Temporal runtime: quiet logs (client/cli/worker-log.ts), and with `metrics` its Prometheus endpoint (`/metrics`) at that host:port. */
async function quietRuntime(metrics?: { host: string; port: number }): Promise<void> {
  const { Runtime, DefaultLogger } = await import('@temporalio/worker');
  const { keelLogFunction, keelLogLevel } = await import('../worker-log.js');
  const level = keelLogLevel();
  try {
    Runtime.install({
      // a failed activity on one line (its task token, stack and cause at KEEL_LOG_LEVEL=DEBUG)
      logger: new DefaultLogger(level, keelLogFunction(level)),
      ...(metrics
        ? { telemetryOptions: { metrics: { prometheus: { bindAddress: `${metrics.host}:${metrics.port}` } } } }
        : {}),
    });
  } catch {
    // already installed
  }
}

/** `settings`: how the worker connects (the global connection flags; `keel dev`: its own plaintext server). */
async function startWorker(
  g: GlobalOptions,
  flags: WorkerFlags,
  settings: ConnectionSettings,
  loaded?: ToolDefinition[],
  dev = false,
) {
  const { createAgentWorker } = await import('../../worker/create-worker.js');
  const tools = loaded ?? (await loadTools(flags));
  const approvals = approvalsFromFlags(flags, tools, dev);
  const mcpServers = await loadMcpServers(flags);
  const models = await loadModels(flags);
  const workerOptions = {
    ...(flags.maxConcurrentActivities ? { maxConcurrentActivityTaskExecutions: flags.maxConcurrentActivities } : {}),
    ...(flags.maxConcurrentWorkflowTasks
      ? { maxConcurrentWorkflowTaskExecutions: flags.maxConcurrentWorkflowTasks }
      : {}),
  };
  const versioning = {
    deploymentName: flags.deploymentName,
    buildId: flags.buildId,
    makeCurrent: flags.makeCurrent !== false,
  };
  const graders = await loadGraders(flags);
  const agents = await loadAgents(flags);
  const worker = await createAgentWorker({
    ...settings,
    taskQueue: g.taskQueue,
    tools,
    ...(graders.length ? { graders } : {}),
    ...(agents.length ? { agents } : {}),
    models,
    workerOptions,
    versioning,
    encryption: g.encryption,
    ...(flags.role ? { role: flags.role } : {}),
    ...(approvals ? { approvals } : {}),
    ...(mcpServers ? { mcpServers } : {}),
  });
  return { worker, tools, agents, mcpServers: Object.keys(mcpServers ?? {}) };
}

/** The first line of a description, at most 100 characters. */
function firstLine(text: string): string {
  const line = text.split('\n', 1)[0].trim();
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}

/**
 * One line per MCP server of `flags` (started or reached here, then closed, as `keel tools` does): how many tools it
 * lists, or why it cannot start — so `keel dev` never says ready about a server that is broken.
 */
async function mcpServerLines(flags: WorkerFlags): Promise<string[]> {
  const servers = await loadMcpServers(flags);
  if (!servers) return [];
  const { McpToolSource } = await import('../../activities/mcp/tool-source.js');
  const source = new McpToolSource(servers);
  try {
    const lines: string[] = [];
    for (const server of Object.keys(servers)) {
      const { records, errors } = await source.resolve([`${server}__*`]);
      lines.push(
        errors.length
          ? `[keel] MCP server ${server}: cannot start: ${errors.map((e) => e.replace(/^tools: "[^"]*": /, '')).join('; ')}`
          : `[keel] MCP server ${server}: ${records.length} tool${records.length === 1 ? '' : 's'}`,
      );
    }
    return lines;
  } finally {
    await source.close();
  }
}

/** `, MCP servers a, b (…)` for the start line, or nothing. */
function mcpLine(servers: string[]): string {
  return servers.length ? `, MCP servers ${servers.join(', ')} (tools named <server>__<tool>)` : '';
}

/**
 * Resolves at the first SIGINT/SIGTERM. Holds a timer meanwhile: the dev server is a child of the native bridge and
 * keeps nothing alive in Node's event loop, so without it `keel dev --no-worker` would end at once.
 */
function untilSignal(): Promise<NodeJS.Signals> {
  const keepAlive = setInterval(() => {}, 2 ** 30);
  return new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  }).finally(() => clearInterval(keepAlive));
}

/**
 * The `keel run` that `keel dev` suggests, with every flag a new shell of the same environment needs to reach this
 * server and worker: `--address` (unless it resolves there anyway), `--namespace`, `--task-queue`.
 */
export function tryCommand(g: Pick<GlobalOptions, 'namespace' | 'taskQueue'>, port: number): string {
  const defaults = resolveConnection({});
  const address = `localhost:${port}`;
  const flags = [
    ...(defaults.address === address ? [] : ['--address', address]),
    ...(defaults.namespace === g.namespace ? [] : ['--namespace', g.namespace]),
    ...((process.env.KEEL_TASK_QUEUE ?? DEFAULT_TASK_QUEUE) === g.taskQueue ? [] : ['--task-queue', g.taskQueue]),
  ];
  return ['npx', 'keel', 'run', 'hello', '--model', 'scripted/hello', ...flags].map(shellWord).join(' ');
}

/** The line after `keel dev`'s `Try:` command (prose: the `Try:` line above it is the whole command to paste). */
export const REAL_MODEL_NOTE =
  'A real model: the same with --model anthropic/claude-sonnet-4-5 and ANTHROPIC_API_KEY set';

/** Where `keel dev --encrypt` keeps its key file (relative to the working directory, like .keel/dev.db). */
export const DEV_KEY_FILE = '.keel/encryption-keys.json';

/** `keel dev --server-log` (the Temporal CLI's `--log-level` values, client/dev-server.ts ServerLogLevel). */
const SERVER_LOG_LEVELS: ServerLogLevel[] = ['debug', 'info', 'warn', 'error', 'never'];

/**
 * `keel dev --encrypt`: the key file (reused, else made), a codec server on 127.0.0.1:`codecPort` that the UI at
 * `uiPort` may call, and the key ring the dev worker seals with. The dev UI has no login to forward a token from, so
 * this codec server runs with `insecureNoAuth` (loopback only) and the ready text says so (README "Reading encrypted
 * runs: the codec server"); a shared machine runs `keel codec-server` with a token instead.
 */
async function startDevEncryption(
  uiPort: number,
  codecPort: number,
): Promise<{ keyFile: string; created: boolean; codec: CodecServer; keyRing: KeyRing }> {
  const { ensureKeyFile } = await import('./encryption.js');
  const { createCodecServer } = await import('../../client/codec-server.js');
  const keyFile = resolve(DEV_KEY_FILE);
  const { ring, created } = ensureKeyFile(keyFile);
  let codec: CodecServer;
  try {
    codec = await createCodecServer({
      keyRing: ring,
      port: codecPort,
      origins: [`http://localhost:${uiPort}`, `http://127.0.0.1:${uiPort}`],
      insecureNoAuth: true, // announced in the ready text
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EADDRINUSE')
      throw usageError(
        `Port ${codecPort} (codec server) is in use: stop what holds it, or choose another port with --codec-port`,
      );
    throw err;
  }
  return { keyFile, created, codec, keyRing: ring };
}

/** `keel dev --encrypt`'s codec server takes no token (the dev UI has no login): said at start, every time. */
export const DEV_CODEC_NOTICE =
  '[keel] codec server: no authentication (--insecure-no-auth, loopback only): any process on this machine can decode these runs (development only)';

/** What `keel dev` answers when a port or its SQLite file is taken: the holder, and the flag that avoids it. */
function inUseHint(err: ResourceInUseError): string {
  const fix = err.resource.endsWith('(gRPC)')
    ? 'choose another port with --port'
    : err.resource.endsWith('(Web UI)')
      ? 'choose another port with --ui-port'
      : 'use another file with --db, or --in-memory';
  return `${err.message}: stop it, or ${fix}.`;
}

function portOf(address: string): number | undefined {
  const m = /:(\d+)$/.exec(address);
  return m ? Number(m[1]) : undefined;
}

function workerOptions(cmd: Command): Command {
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
const TOOLS_OPTIONS = ['--no-builtin', '--tools-module', '--mcp', '--approve', '--sandbox', '--help'];

/** Hides from `cmd`'s help every option not named in `shown` (they are still accepted). */
function hideOptionsExcept(cmd: Command, shown: string[]): void {
  for (const option of cmd.options) if (!shown.includes(option.long ?? '')) option.hideHelp();
}

export function registerServerCommands(program: Command): void {
  workerOptions(
    program
      .command('dev')
      .summary('Temporal dev server (persistent SQLite + Web UI) and a Keel worker, until Ctrl-C')
      .description(
        'Starts a local Temporal dev server whose data lives in a SQLite file (default .keel/dev.db, so runs survive a restart ' +
          'of `keel dev`), its Web UI, and an in-process Keel worker with the built-in tools (a sandboxed workspace per conversation) ' +
          'on the task queue (--task-queue, default keel). Runs until Ctrl-C.',
      )
      .option('--db <file>', 'SQLite file of the dev server', '.keel/dev.db')
      .option('--in-memory', 'keep nothing: an in-memory dev server')
      .option('--port <port>', 'gRPC port (default: the port of --address, 7233)', intOption('--port'))
      .option('--ui-port <port>', 'Web UI port', intOption('--ui-port'), 8233)
      .option('--no-worker', 'start the server only')
      .option(
        '--encrypt',
        `encrypt payloads: keys in ${DEV_KEY_FILE} (made at the first start), a codec server on 127.0.0.1 for the Web UI and the temporal CLI`,
      )
      .option('--codec-port <port>', 'port of the codec server of --encrypt', intOption('--codec-port'), 8234)
      .addOption(
        new Option(
          '--server-log <level>',
          "the Temporal server's own log lines on stderr from this level up (they are about its internals, e.g. an " +
            'ERROR while it retries its Worker Deployment workflow under load)',
        )
          .choices(SERVER_LOG_LEVELS)
          .default('never'),
      ),
  ).action(
    act(
      async (
        o: WorkerFlags & {
          db: string;
          inMemory?: boolean;
          port?: number;
          uiPort: number;
          worker: boolean;
          encrypt?: boolean;
          codecPort: number;
          serverLog: ServerLogLevel;
        },
        cmd: Command,
      ) => {
        const g = globals(cmd);
        const port = o.port ?? portOf(g.address) ?? 7233;
        await quietRuntime();
        const { startDevServer } = await import('../../dev/dev-server.js');
        const dbFilename = o.inMemory ? undefined : resolve(o.db);
        if (dbFilename) mkdirSync(dirname(dbFilename), { recursive: true });
        const encryption = o.encrypt ? await startDevEncryption(o.uiPort, o.codecPort) : undefined;
        let server;
        try {
          server = await startDevServer({
            port,
            ui: true,
            uiPort: o.uiPort,
            namespace: g.namespace,
            ...(dbFilename ? { dbFilename } : {}),
            ...(encryption ? { uiCodecEndpoint: encryption.codec.url } : {}),
            logLevel: o.serverLog,
            log: (s) => process.stderr.write(`${s}\n`),
          });
        } catch (err) {
          await encryption?.codec.close();
          if (err instanceof ResourceInUseError) throw new CliError(EXIT.usage, inUseHint(err));
          throw new CliError(
            EXIT.usage,
            `Could not start the dev server on port ${port} (UI ${o.uiPort}): ${(err as Error).message}`,
          );
        }
        const address = server.address;
        const ui = `http://localhost:${o.uiPort}`;
        const forget = recordDevServer(`localhost:${port}`, ui, encryption?.keyFile);
        let worker: Awaited<ReturnType<typeof startWorker>>['worker'] | undefined;
        let running: Promise<void> | undefined;
        try {
          if (o.worker) {
            const started = await startWorker(
              encryption ? { ...g, encryption: { keyRing: encryption.keyRing } } : g,
              o,
              { address, namespace: g.namespace, tls: false },
              undefined,
              true,
            );
            worker = started.worker;
            running = worker.run();
            running.catch((err) => process.stderr.write(`[keel] worker stopped: ${(err as Error).message}\n`));
            process.stderr.write(
              `[keel] worker on task queue ${g.taskQueue}: tools ${started.tools.map((t) => t.name).join(', ') || '(none)'}, ${describeTools(o)}${mcpLine(started.mcpServers)}\n`,
            );
            for (const line of await mcpServerLines(o)) process.stderr.write(`${line}\n`);
          }
          if (encryption) process.stderr.write(`${DEV_CODEC_NOTICE}\n`);
          // with --encrypt, a keel command in another shell finds the key file in this server's record (dev-registry.ts)
          process.stdout.write(
            `Keel dev server ready at ${address.replace('127.0.0.1', 'localhost')} · Web UI ${ui}/namespaces/${g.namespace}/workflows\n` +
              `${dbFilename ? `Data: ${dbFilename}` : 'Data: in memory'} · Ctrl-C to stop\n` +
              (encryption
                ? `Encryption: keys ${encryption.keyFile}${encryption.created ? ' (new)' : ''} · codec server ${encryption.codec.url} (the Web UI decodes through it; temporal CLI: add --codec-endpoint ${encryption.codec.url})\n`
                : '') +
              (o.worker
                ? `Try: ${tryCommand(g, port)}\n${REAL_MODEL_NOTE}\n`
                : `Start a worker: ${tryCommand(g, port).replace(/ run hello --model scripted\/hello/, ' worker')}\n`),
          );
          const signal = await untilSignal();
          process.stderr.write(`[keel] ${signal}: stopping\n`);
        } finally {
          forget();
          if (worker) await worker.shutdown().catch(() => undefined);
          await running?.catch(() => undefined);
          await server.shutdown();
          await encryption?.codec.close();
        }
      },
    ),
  );

  workerOptions(
    program
      .command('worker')
      .summary('a Keel worker (built-in tools, scripted + pi-ai models), until Ctrl-C')
      .description(
        'Runs a Keel worker against --address on --task-queue: agentWorkflow, agentBatchWorkflow and the activities, with the ' +
          'built-in tools confined to a workspace per conversation (or --workspace), their processes sandboxed, and the models scripted/* and every pi-ai provider (API keys from the ' +
          "worker's environment). Runs until Ctrl-C / SIGTERM.",
      ),
  )
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics (Temporal SDK + Keel: tokens, cost, model and tool latency) at /metrics',
      intOption('--metrics-port'),
    )
    .option('--metrics-host <host>', 'interface for --metrics-port (0.0.0.0 in a container)', '127.0.0.1')
    .option(
      '--role <role>',
      'all: everything; model: workflows and model calls on --task-queue, no tool runs here; tools: tool calls only, on ' +
        '<task-queue>-tools, no workflows or model calls: start it without provider keys (README "Worker roles")',
      roleOption,
      'all',
    )
    .action(
      act(async (o: WorkerFlags & { metricsPort?: number; metricsHost: string }, cmd: Command) => {
        const g = globals(cmd);
        await quietRuntime(o.metricsPort ? { host: o.metricsHost, port: o.metricsPort } : undefined);
        const loaded = await loadTools(o); // a bad --tools-module or --approve: exit 2 before connecting
        approvalsFromFlags(o, loaded, false); // so are approval flags that contradict, or are missing
        const { connect } = await import('../context.js');
        const probe = await connect(g); // exit 3 early when Temporal is down
        await probe.close();
        const { worker, tools, agents, mcpServers } = await startWorker(g, o, g.settings, loaded);
        const running = worker.run();
        const queues =
          o.role === 'tools'
            ? `(role tools) on task queue ${g.taskQueue}-tools`
            : o.role === 'model'
              ? `(role model) on task queue ${g.taskQueue} (tools on ${g.taskQueue}-tools)`
              : `on task queue ${g.taskQueue}`;
        process.stdout.write(
          `[keel] worker ${queues} at ${g.address}, ${describeTools(o)}, tools ${tools.map((t) => t.name).join(', ') || '(none)'}${agents.length ? `, sub-agents ${agents.map((a) => a.name).join(', ')}` : ''}${mcpLine(mcpServers)}` +
            `${o.metricsPort ? `, metrics http://${o.metricsHost}:${o.metricsPort}/metrics` : ''}\n`,
        );
        const stopped = await Promise.race([
          untilSignal().then(() => 'signal' as const),
          running.then(() => 'ended' as const),
        ]);
        if (stopped === 'signal') await worker.shutdown();
        await running;
      }),
    );

  const tools = workerOptions(
    program
      .command('tools')
      .summary('the tools a worker started with these options offers, MCP ones with their server')
      .description(
        'Lists every tool `keel worker` with the same options would offer: the built-in tools (unless --no-builtin), those ' +
          'of each --tools-module, and those each --mcp server lists now (started or reached here, then closed), one line ' +
          'each: name, where it comes from, how it is retried and approved, and the first line of its description. ' +
          "Needs no Temporal server. It takes every option of `keel worker` (paste a worker's options as they are); " +
          'only those listed here change what it lists.',
      ),
  );
  hideOptionsExcept(tools, TOOLS_OPTIONS);
  tools.action(
    act(async (o: WorkerFlags) => {
      // schemas only: nothing runs here, so no sandbox is checked
      const local = await loadTools({ ...o, role: 'model' });
      const servers = await loadMcpServers(o);
      const rows: string[][] = local.map((t) => [
        t.name,
        'worker',
        `${t.idempotent ? 'idempotent' : 'at most once'}${t.approval && t.approval !== 'never' ? ', approval' : ''}`,
        firstLine(t.description),
      ]);
      for (const a of await loadAgents(o))
        rows.push([a.name, 'sub-agent', `child run, ${a.model ?? "the run's model"}`, firstLine(a.description)]);
      if (servers) {
        const { McpToolSource } = await import('../../activities/mcp/tool-source.js');
        const source = new McpToolSource(servers);
        try {
          for (const server of Object.keys(servers)) {
            const { records, errors } = await source.resolve([`${server}__*`]);
            if (errors.length) throw new CliError(EXIT.usage, errors.join('\n'));
            for (const r of records) {
              const t = source.definition(r);
              rows.push([
                t.name,
                `mcp ${server}`,
                `${t.idempotent ? 'idempotent' : 'at most once'}${t.approval === 'always' ? ', approval' : ''}${r.openWorld ? ', open world' : ''}`,
                firstLine(t.description),
              ]);
            }
          }
        } finally {
          await source.close();
        }
      }
      const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i].length)));
      for (const r of rows)
        process.stdout.write(
          `${r
            .map((c, i) => (i < 3 ? c.padEnd(widths[i]) : c))
            .join('  ')
            .trimEnd()}\n`,
        );
      if (rows.length === 0) process.stdout.write('(no tools)\n');
    }),
  );

  program
    .command('demo')
    .summary('the seed demo on an embedded dev server (same as `npm run demo`)')
    .option('--keep', 'keep the dev server up afterwards to browse the run in the UI')
    .option(
      '-m, --model <provider/model-id>',
      'play the demo to a real model (API key from the environment)',
      'scripted/demo',
    )
    .option('--db <file>', "SQLite file of the dev server (not `keel dev`'s)", '.keel/demo.db')
    .action(
      act(async (o: { keep?: boolean; model: string; db: string }) => {
        const { runDemo } = await import('../../demo/run-demo.js');
        return (await runDemo({ keep: o.keep === true, model: o.model, dbFilename: o.db })) ? EXIT.ok : EXIT.runFailed;
      }),
    );
}
