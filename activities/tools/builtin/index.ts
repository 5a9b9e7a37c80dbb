/**
 * Pi's seven built-in coding tools (reference §C), confined to a workspace. Register them on the worker with
 * `createAgentWorker({ tools: builtinTools({ cwd }) })`; a run enables them by name (Pi's default set is
 * {@link DEFAULT_ACTIVE_TOOLS}).
 */
import type { ToolApproval, ToolDefinition } from '../define-tool.js';
import { createBashTool } from './bash.js';
import { createEditTool } from './edit.js';
import { createFindTool } from './find.js';
import { createGrepTool } from './grep.js';
import { createLsTool } from './ls.js';
import { Workspace } from './paths.js';
import { createReadTool } from './read.js';
import { createWriteTool } from './write.js';
import type { ToolEnvOptions } from './tool-env.js';

export interface BuiltinToolsOptions {
  /** Workspace root: relative paths resolve against it, bash runs in it, and file tools may not leave it. */
  cwd: string;
  /** More directories the file tools may use. */
  allowedRoots?: string[];
  /** grep/find: `true` requires rg/fd, `false` forces the pure-Node search, default uses them when on PATH. */
  useExternalSearch?: boolean;
  /**
   * The environment of tool processes (`bash`, `rg`, `fd`): the worker's without secrets — provider keys, `KEEL_*`,
   * `TEMPORAL_*`, `*_KEY`/`*_TOKEN`/`*_SECRET`/`*_PASSWORD` — except the names in `pass`, e.g. `{ pass: ['GITHUB_TOKEN'] }`.
   */
  env?: ToolEnvOptions;
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
}

/** The built-in tools that only read the workspace: {@link BuiltinToolsOptions.localReadTools} places them locally. */
export const READ_ONLY_TOOLS = ['read', 'ls', 'grep', 'find'];

export const DEFAULT_ACTIVE_TOOLS = ['read', 'bash', 'edit', 'write'];

export function builtinTools(opts: BuiltinToolsOptions): ToolDefinition[] {
  const workspace = new Workspace(opts.cwd, opts.allowedRoots);
  const external = opts.useExternalSearch;
  const approved = (name: 'bash' | 'write' | 'edit', tool: ToolDefinition): ToolDefinition => {
    const approval = opts.approval?.[name];
    return approval === undefined ? tool : { ...tool, approval };
  };
  const placed = (tool: ToolDefinition): ToolDefinition =>
    opts.localReadTools === true && READ_ONLY_TOOLS.includes(tool.name) ? { ...tool, localActivity: true } : tool;
  return [
    placed(createReadTool({ workspace })),
    approved('bash', createBashTool({ cwd: workspace.root, inheritEnv: opts.env })),
    approved('edit', createEditTool({ workspace })),
    approved('write', createWriteTool({ workspace })),
    placed(createGrepTool({ workspace, useExternalSearch: external })),
    placed(createFindTool({ workspace, useExternalSearch: external })),
    placed(createLsTool({ workspace })),
  ];
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
export * from './truncate.js';
export { PROVIDER_CREDENTIAL_ENV, isWithheldEnvName, toolEnvironment } from './tool-env.js';
export type { ToolEnvOptions } from './tool-env.js';
