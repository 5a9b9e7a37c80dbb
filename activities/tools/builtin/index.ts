/**
 * Pi's seven built-in coding tools (reference §C), confined to a workspace. Register them on the worker with
 * `createAgentWorker({ tools: builtinTools({ cwd }) })`; a run enables them by name (Pi's default set is
 * {@link DEFAULT_ACTIVE_TOOLS}).
 */
import { Context } from '@temporalio/activity';
import type { ToolApproval, ToolContext, ToolDefinition } from '../define-tool.js';
import { createBashTool } from './bash.js';
import { createEditTool } from './edit.js';
import { createFindTool } from './find.js';
import { createGrepTool } from './grep.js';
import { createLsTool } from './ls.js';
import { Workspace } from './paths.js';
import { createReadTool } from './read.js';
import { RunWorkspaces, type RunDirs, type RunWorkspacesOptions } from './run-workspaces.js';
import { forkMemoOf } from '../../../common/fork.js';
import { resolveSandbox, type Sandbox, type SandboxSetting } from './sandbox.js';
import { createWriteTool } from './write.js';
import type { ToolEnvOptions } from './tool-env.js';
import { DEFAULT_WORKSPACE_BYTES, measuredAfterEachCall, WorkspaceSize } from './workspace-size.js';

export interface BuiltinToolsOptions {
  /**
   * One workspace **every run shares**: relative paths resolve against it, bash runs in it, and file tools may not
   * leave it. Without it (the default of `keel worker` / `keel dev`), each conversation gets a workspace of its own
   * under `workspaces.root` (README "What a tool can reach").
   */
  cwd?: string;
  /**
   * The per-conversation directories (`run-workspaces.ts`): `{ root?, retainClosedMs?, sweepIntervalMs? }` or a
   * {@link RunWorkspaces} of your own (to call `sweep` yourself). With `cwd`, only each run's private temporary
   * directory (bash full-output logs) lives there.
   */
  workspaces?: RunWorkspacesOptions | RunWorkspaces;
  /** More directories the file tools may use (and the sandboxed bash may write); relative to the workspace. */
  allowedRoots?: string[];
  /**
   * Directories every run may read but never write (a shared checkout): `read`, `ls`, `grep`, `find` may use them,
   * `write` and `edit` refuse them, and the sandbox binds them read-only. Absolute paths.
   */
  readOnlyPaths?: string[];
  /** grep/find: `true` requires rg/fd, `false` forces the pure-Node search, default uses them when on PATH. */
  useExternalSearch?: boolean;
  /**
   * The environment of tool processes (`bash`, `rg`, `fd`): PATH, HOME, LANG, TERM and TZ from the worker's, plus the
   * names in `pass`, e.g. `{ pass: ['GITHUB_TOKEN'] }` — nothing else (`tool-env.ts`).
   */
  env?: ToolEnvOptions;
  /**
   * The sandbox of tool processes (`sandbox.ts`): default `'bwrap'` (no network, limits); `{ network: 'host', limits }`
   * to adjust it; `'none'` runs them unsandboxed, announced on stderr. Where bubblewrap cannot run, `builtinTools`
   * throws saying what to do (the worker does not start) unless given `'none'`.
   */
  sandbox?: SandboxSetting;
  /**
   * Human approval of the tools that change things (README "Approvals"): e.g. `{ bash: 'always', write: (args) => … }`.
   * Default: none needs approval.
   */
  approval?: Partial<Record<'bash' | 'write' | 'edit', ToolApproval>>;
  /**
   * `true` places the read-only tools `read`, `ls`, `grep` and `find` as local activities (`localActivity`,
   * docs/local-tools.md): a call runs inside the workflow task when the workflow runs on the run's home worker, with
   * the limits documented there. Default false: every call is a regular activity.
   */
  localReadTools?: boolean;
  /**
   * Limits of the tools' own files (docs/tools.md "What one call may use"): `outputLogBytes`, the most a `bash`
   * full-output log keeps (its tail; default 64 MiB); `workspaceBytes`, the total size of a conversation's workspace
   * (`workspace-size.ts`: default 4 GiB; `Infinity` turns it off). With a shared `cwd` the size limit applies only when
   * `workspaceBytes` is given, to the shared directory as a whole.
   */
  limits?: { outputLogBytes?: number; workspaceBytes?: number };
  /**
   * `true` for a worker with role `model` (README "Worker roles"): it registers the tools for their names and schemas
   * and never runs them, so no sandbox is checked or announced and no workspace is made; a call that reaches `execute`
   * anyway throws `Tool <name> is registered for its schema only: this worker has role "model" and runs no tools`.
   */
  definitionsOnly?: boolean;
}

/** The built-in tools that only read the workspace: {@link BuiltinToolsOptions.localReadTools} places them locally. */
export const READ_ONLY_TOOLS = ['read', 'ls', 'grep', 'find'];

export const DEFAULT_ACTIVE_TOOLS = ['read', 'bash', 'edit', 'write'];

/** At most this many runs' tool sets are kept built (the oldest is rebuilt on its next call). */
const MAX_CACHED_RUNS = 256;

/**
 * Pi's seven tools. Each call works in its conversation's directories ({@link RunWorkspaces}: the workspace, or the
 * shared `cwd`, and the run's private temporary directory), and every process it starts runs in the sandbox.
 * Throws when the sandbox cannot run here and `sandbox` is not `'none'`.
 */
export function builtinTools(opts: BuiltinToolsOptions = {}): ToolDefinition[] {
  if (opts.definitionsOnly === true) return definitionsOnly(opts);
  const sandbox = resolveSandbox(opts.sandbox);
  const workspaces =
    opts.workspaces instanceof RunWorkspaces ? opts.workspaces : new RunWorkspaces(opts.workspaces, opts.cwd);
  const readOnlyPaths = opts.readOnlyPaths ?? [];
  const approved = (name: 'bash' | 'write' | 'edit', tool: ToolDefinition): ToolDefinition => {
    const approval = opts.approval?.[name];
    return approval === undefined ? tool : { ...tool, approval };
  };
  const placed = (tool: ToolDefinition): ToolDefinition =>
    opts.localReadTools === true && READ_ONLY_TOOLS.includes(tool.name) ? { ...tool, localActivity: true } : tool;

  const sizeFor = workspaceSizes(opts);
  const cache = new Map<string, Map<string, ToolDefinition>>();
  workspaces.onRemoved((id) => cache.delete(id));
  const toolsFor = (dirs: RunDirs): Map<string, ToolDefinition> => {
    let tools = cache.get(dirs.workflowId);
    if (tools) {
      cache.delete(dirs.workflowId); // most recently used last
      cache.set(dirs.workflowId, tools);
      return tools;
    }
    tools = new Map(buildTools(dirs, opts, readOnlyPaths, sandbox, sizeFor(dirs)).map((t) => [t.name, t]));
    cache.set(dirs.workflowId, tools);
    if (cache.size > MAX_CACHED_RUNS) cache.delete(cache.keys().next().value as string);
    return tools;
  };

  // The definitions the worker registers: metadata from tools on a placeholder workspace, calls routed per run.
  const templates = buildTools(
    { workflowId: '', dir: workspaces.root, workspace: opts.cwd ?? workspaces.root, tmpDir: workspaces.root },
    opts,
    readOnlyPaths,
    undefined,
  );
  return templates.map((template) => {
    const name = template.name;
    const routed: ToolDefinition = {
      ...template,
      execute: (toolCallId, args, signal, onUpdate, context: ToolContext) => {
        startSweeping(workspaces);
        return workspaces.use(
          context.workflowId,
          (dirs) => toolsFor(dirs).get(name)!.execute(toolCallId, args, signal, onUpdate, context),
          forkOrigin,
        );
      },
    };
    return placed(name === 'bash' || name === 'write' || name === 'edit' ? approved(name, routed) : routed);
  });
}

/**
 * The size figure each run's tools share ({@link BuiltinToolsOptions.limits} `workspaceBytes`): a new one per
 * conversation's workspace (default 4 GiB), or, with a shared `cwd`, one for every run, only when `workspaceBytes` is
 * given. Undefined: no size limit.
 */
function workspaceSizes(opts: BuiltinToolsOptions): (dirs: RunDirs) => WorkspaceSize | undefined {
  const given = opts.limits?.workspaceBytes;
  if (given === Infinity) return () => undefined;
  if (opts.cwd !== undefined) {
    const shared = given === undefined ? undefined : new WorkspaceSize(opts.cwd, { limitBytes: given });
    return () => shared;
  }
  return (dirs) => new WorkspaceSize(dirs.workspace, { limitBytes: given ?? DEFAULT_WORKSPACE_BYTES });
}

/** The tools' definitions for a worker that never runs them ({@link BuiltinToolsOptions.definitionsOnly}). */
function definitionsOnly(opts: BuiltinToolsOptions): ToolDefinition[] {
  const placeholder = opts.cwd ?? '/nonexistent';
  const dirs = { workflowId: '', dir: placeholder, workspace: placeholder, tmpDir: placeholder };
  return buildTools(dirs, opts, opts.readOnlyPaths ?? [], undefined).map((tool) => ({
    ...tool,
    execute: () =>
      Promise.reject(
        new Error(
          `Tool ${tool.name} is registered for its schema only: this worker has role "model" and runs no tools`,
        ),
      ),
  }));
}

function buildTools(
  dirs: RunDirs,
  opts: BuiltinToolsOptions,
  readOnlyPaths: readonly string[],
  sandbox: Sandbox | undefined,
  size?: WorkspaceSize,
): ToolDefinition[] {
  const workspace = new Workspace(dirs.workspace, opts.allowedRoots, dirs.tmpDir);
  const readable = new Workspace(dirs.workspace, [...(opts.allowedRoots ?? []), ...readOnlyPaths], dirs.tmpDir);
  const allowed = workspace.roots.slice(1);
  const external = opts.useExternalSearch;
  const search = sandbox?.wrapper({
    workspace: dirs.workspace,
    workspaceReadOnly: true,
    readOnly: [...allowed, ...readOnlyPaths],
  });
  const bash = createBashTool({
    cwd: dirs.workspace,
    tmpDir: dirs.tmpDir,
    inheritEnv: opts.env,
    readOnlyPaths,
    writablePaths: allowed,
    ...(sandbox ? { sandbox } : {}),
    ...(opts.limits?.outputLogBytes !== undefined ? { outputLogBytes: opts.limits.outputLogBytes } : {}),
  });
  return [
    createReadTool({ workspace: readable }),
    size ? measuredAfterEachCall(bash, size) : bash,
    createEditTool({ workspace, ...(size ? { size } : {}) }),
    createWriteTool({ workspace, ...(size ? { size } : {}) }),
    createGrepTool({ workspace: readable, useExternalSearch: external, ...(search ? { wrap: search } : {}) }),
    createFindTool({ workspace: readable, useExternalSearch: external, ...(search ? { wrap: search } : {}) }),
    createLsTool({ workspace: readable }),
  ];
}

/**
 * A new conversation's workspace origin: the original of a fork (its memo `keelForkedFrom`; not a rewind, which keeps
 * its own workspace), read by one describe through the activity's client when the conversation's directory is made.
 */
async function forkOrigin(workflowId: string): Promise<string | undefined> {
  let client;
  try {
    client = Context.current().client;
  } catch {
    return undefined; // not in an activity (a direct call, e.g. a unit test)
  }
  const fork = forkMemoOf((await client.workflow.getHandle(workflowId).describe()).memo);
  return fork && !fork.rewound ? fork.workflowId : undefined;
}

/** The sweep needs a client: the activity's, from the first call after the worker started. */
function startSweeping(workspaces: RunWorkspaces): void {
  let client;
  try {
    client = Context.current().client;
  } catch {
    return; // not in an activity (a direct call, e.g. a unit test)
  }
  workspaces.startSweeping(client);
}

export { createBashTool, createLocalBashOperations, executeBashWithOperations } from './bash.js';
export type { BashOperations, BashToolDetails, BashToolOptions } from './bash.js';
export { computeEditsDiff, createEditTool, prepareEditArguments } from './edit.js';
export type { EditOperations, EditToolDetails } from './edit.js';
export { createFindTool } from './find.js';
export { createGrepTool } from './grep.js';
export { createLsTool } from './ls.js';
export { Workspace, expandPath, resolveToCwd } from './paths.js';
export { createReadTool } from './read.js';
export { createWriteTool } from './write.js';
export { DEFAULT_WORKSPACE_BYTES, WorkspaceSize, workspaceFullError, workspaceOverNotice } from './workspace-size.js';
export type { WorkspaceSizeOptions } from './workspace-size.js';
export * from './truncate.js';
export { PROVIDER_CREDENTIAL_ENV, TOOL_ENV_ALLOWLIST, isWithheldEnvName, toolEnvironment } from './tool-env.js';
export { RunWorkspaces, defaultWorkspaceRoot, runDirName } from './run-workspaces.js';
export type { RunDirs, RunWorkspacesOptions } from './run-workspaces.js';
export { Sandbox, resolveSandbox, sandboxUnavailable, UNSANDBOXED_WARNING } from './sandbox.js';
export type { SandboxLimits, SandboxNetwork, SandboxOptions, SandboxSetting } from './sandbox.js';
export type { ToolEnvOptions } from './tool-env.js';
