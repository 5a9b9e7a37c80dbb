/**
 * What a worker started from flags registers (`keel dev`, `keel worker`, `keel tools`): the built-in tools on their
 * workspace and sandbox, the user modules named by `--tools-module` (tools, graders, sub-agents), the `--scripts`
 * scripted models and the `--mcp` server files. Every refusal is a {@link WorkerModulesError} whose message names the
 * flag and what to do; the CLI prints it as a usage error (exit 2). The activities are imported when first needed, so
 * loading this file costs nothing to a command that starts no worker.
 */
import { existsSync, readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentDefinition } from '../activities/agents/define-agent.js';
import type { GraderDefinition } from '../activities/graders.js';
import type { McpServers } from '../activities/mcp/config.js';
import type { ModelRegistry } from '../activities/model/provider.js';
import type { Script } from '../activities/model/scripted.js';
import type { SandboxSetting } from '../activities/tools/builtin/sandbox.js';
import type { ToolDefinition } from '../activities/tools/define-tool.js';
import type { WorkerRole } from '../common/task-queues.js';

/** A flag that names a module, file or setting the worker cannot use; the message says which and what to do. */
export class WorkerModulesError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'WorkerModulesError';
  }
}

/** The flags (or their environment defaults) that decide what a worker registers. */
export interface WorkerModuleFlags {
  workspace?: string;
  workspaceRoot?: string;
  sandbox?: string;
  network?: string;
  toolsModule?: string[];
  scripts?: string;
  builtin?: boolean;
  /** `keel worker --role` (README "Worker roles"); `keel dev` is always `all`. */
  role?: WorkerRole;
  /** `--mcp <config.json>` files in the `{ "mcpServers": { … } }` format; repeatable. */
  mcp?: string[];
  /** `keel dev --db`: the dev server's SQLite file, which a shared workspace must not hold. */
  db?: string;
}

/** The MCP servers of every `--mcp` file (README "MCP servers"); a bad file is refused naming it. */
export async function loadMcpServers(flags: WorkerModuleFlags): Promise<McpServers | undefined> {
  if (!flags.mcp?.length) return undefined;
  const { loadMcpConfig } = await import('../activities/mcp/config.js');
  const servers: McpServers = {};
  for (const file of flags.mcp) {
    let loaded: McpServers;
    try {
      loaded = loadMcpConfig(resolve(file));
    } catch (err) {
      throw new WorkerModulesError((err as Error).message); // names the file and every problem in it
    }
    for (const name of Object.keys(loaded))
      if (name in servers)
        throw new WorkerModulesError(`--mcp ${file}: the MCP server "${name}" is named in two --mcp files`);
    Object.assign(servers, loaded);
  }
  // --sandbox none: the stdio servers run unsandboxed too (announced when they are created), unless one says otherwise
  if (sandboxSetting(flags) === 'none')
    for (const [name, s] of Object.entries(servers))
      if ('command' in s && s.sandbox === undefined) servers[name] = { ...s, sandbox: false };
  const { mcpSandboxRefusal } = await import('../activities/mcp/sandbox.js');
  const refusal = mcpSandboxRefusal(servers);
  if (refusal) throw new WorkerModulesError(refusal);
  return servers;
}

/** One MCP server's tools as a worker would offer them now (`errors`: why it cannot start or list them). */
export interface McpServerTools {
  server: string;
  tools: { definition: ToolDefinition; openWorld?: boolean }[];
  errors: string[];
}

/** Starts (or reaches) every server of `servers`, lists its tools, and closes them all again, as `keel tools` does. */
export async function listMcpTools(servers: McpServers): Promise<McpServerTools[]> {
  const { McpToolSource } = await import('../activities/mcp/tool-source.js');
  const source = new McpToolSource(servers);
  try {
    const out: McpServerTools[] = [];
    for (const server of Object.keys(servers)) {
      const { records, errors } = await source.resolve([`${server}__*`]);
      out.push({
        server,
        tools: records.map((r) => ({ definition: source.definition(r), openWorld: r.openWorld })),
        errors,
      });
    }
    return out;
  } finally {
    await source.close();
  }
}

/** The workspace every run shares when one is configured (--workspace, else $KEEL_WORKSPACE); else one per conversation. */
export function sharedWorkspace(flags: WorkerModuleFlags): string | undefined {
  const dir = flags.workspace ?? (process.env.KEEL_WORKSPACE || undefined);
  return dir === undefined ? undefined : resolve(dir);
}

/** --sandbox (or $KEEL_SANDBOX): bwrap (default) or none; --network (or $KEEL_SANDBOX_NETWORK): none (default) or host. */
export function sandboxSetting(flags: WorkerModuleFlags): SandboxSetting {
  const sandbox = flags.sandbox ?? (process.env.KEEL_SANDBOX || 'bwrap');
  if (sandbox !== 'bwrap' && sandbox !== 'none')
    throw new WorkerModulesError(`--sandbox must be bwrap or none, got ${sandbox}`);
  const network = flags.network ?? (process.env.KEEL_SANDBOX_NETWORK || 'none');
  if (network !== 'none' && network !== 'host')
    throw new WorkerModulesError(`--network must be none or host, got ${network}`);
  return sandbox === 'none' ? 'none' : { network };
}

/** Where the built-in tools work and how their processes run, for the worker's start line. */
export async function describeTools(flags: WorkerModuleFlags): Promise<string> {
  if (flags.role === 'model') return 'runs no tool';
  if (flags.builtin === false) {
    const shared = sharedWorkspace(flags);
    return shared ? `workspace ${shared}` : 'no built-in tools';
  }
  const { defaultWorkspaceRoot } = await import('../activities/tools/builtin/run-workspaces.js');
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

/**
 * A shared workspace must not hold Keel's own data (README "What a tool can reach"): `.keel/` of the working directory,
 * the payload store's directory, the dev server's database. Refuses naming what it holds.
 */
function refuseKeelDataInside(workspace: string, flags: WorkerModuleFlags): void {
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
    throw new WorkerModulesError(
      `--workspace ${workspace} holds Keel's own data (${inside.join(', ')}), which a tool could then read or change. ` +
        'Leave out --workspace (each conversation gets a workspace of its own), or name a directory that does not hold it.',
    );
}

/** The built-in seven on the workspace (unless --no-builtin); a model worker only registers their definitions. */
async function loadBuiltinTools(flags: WorkerModuleFlags): Promise<ToolDefinition[]> {
  const { builtinTools } = await import('../activities/tools/builtin/index.js');
  const workspace = sharedWorkspace(flags);
  if (workspace !== undefined && !existsSync(workspace))
    throw new WorkerModulesError(`--workspace ${workspace} does not exist`);
  if (workspace !== undefined && flags.builtin !== false) refuseKeelDataInside(workspace, flags);
  if (flags.builtin === false) return [];
  try {
    return builtinTools({
      ...(workspace !== undefined ? { cwd: workspace } : {}),
      workspaces: flags.workspaceRoot ? { root: resolve(flags.workspaceRoot) } : {},
      // a model worker registers the tools for their schemas and never runs them: no sandbox to check
      ...(flags.role === 'model' ? { definitionsOnly: true } : { sandbox: sandboxSetting(flags) }),
    });
  } catch (err) {
    if (err instanceof WorkerModulesError) throw err;
    throw new WorkerModulesError((err as Error).message); // no sandbox here: says what to do
  }
}

/** Tools: the built-in seven on the workspace (unless --no-builtin) plus every `--tools-module`'s export. */
export async function loadTools(flags: WorkerModuleFlags): Promise<ToolDefinition[]> {
  const tools = await loadBuiltinTools(flags);
  for (const file of flags.toolsModule ?? []) {
    const path = resolve(file);
    if (!existsSync(path)) throw new WorkerModulesError(`--tools-module ${file}: no such file`);
    let mod: { default?: unknown; tools?: unknown; graders?: unknown; agents?: unknown };
    try {
      mod = (await import(pathToFileURL(path).href)) as typeof mod;
    } catch (err) {
      // a syntax error (or a throw at load) names the option and the file, not only the compiler's words
      throw new WorkerModulesError(`--tools-module ${file}: could not load it: ${(err as Error).message}`);
    }
    const list = Array.isArray(mod.tools) ? mod.tools : Array.isArray(mod.default) ? mod.default : undefined;
    if (!list && (Array.isArray(mod.graders) || Array.isArray(mod.agents))) continue; // graders / agents only
    if (!list)
      throw new WorkerModulesError(
        `--tools-module ${file} must export \`tools\` (or a default export): an array of defineTool(...) results`,
      );
    tools.push(...(list as ToolDefinition[]));
  }
  return tools;
}

/** Graders: every `--tools-module`'s `graders` export (defineGrader results), for graded batches. */
export function loadGraders(flags: WorkerModuleFlags): Promise<GraderDefinition[]> {
  return moduleArrays<GraderDefinition>(flags, 'graders', 'defineGrader');
}

/** Sub-agents: every `--tools-module`'s `agents` export (defineAgent results), README "Sub-agents". */
export function loadAgents(flags: WorkerModuleFlags): Promise<AgentDefinition[]> {
  return moduleArrays<AgentDefinition>(flags, 'agents', 'defineAgent');
}

/** The `name` exports of every `--tools-module` that has one, each an array of `maker(...)` results, concatenated. */
async function moduleArrays<T>(flags: WorkerModuleFlags, name: 'graders' | 'agents', maker: string): Promise<T[]> {
  const out: T[] = [];
  for (const file of flags.toolsModule ?? []) {
    const value = ((await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>)[name];
    if (value === undefined) continue;
    if (!Array.isArray(value))
      throw new WorkerModulesError(`--tools-module ${file}: \`${name}\` must be an array of ${maker}(...) results`);
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
export async function loadModels(flags: WorkerModuleFlags): Promise<ModelRegistry> {
  const { scriptedModel } = await import('../activities/model/scripted.js');
  const { piAiProvider } = await import('../activities/model/pi-ai.js');
  let scripts: Record<string, Script> = { hello: HELLO_SCRIPT };
  if (flags.scripts) {
    try {
      scripts = {
        ...scripts,
        ...(JSON.parse(readFileSync(resolve(flags.scripts), 'utf8')) as Record<string, Script>),
      };
    } catch (err) {
      throw new WorkerModulesError(`--scripts ${flags.scripts}: ${(err as Error).message}`);
    }
  }
  return { scripted: scriptedModel(scripts), '*': piAiProvider() };
}
