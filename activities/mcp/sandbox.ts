/**
 * How a stdio MCP server is started: inside the bubblewrap sandbox of the built-in tools
 * (`activities/tools/builtin/sandbox.ts`), one sandbox per server, unless its configuration says `sandbox: false`.
 *
 * A sandboxed server sees the system read-only (`/etc` with its secrets masked), its own `/proc` (no process of the
 * worker, so not the worker's environment), a fresh `/tmp` (its `HOME` unless `env` sets one), and:
 *
 * - its `cwd` read-write, or when it has none the worker's directory read-only (a server installed there needs its
 *   `node_modules`) with `.keel/` and `.env*` hidden;
 * - read-write, every directory an argument names (absolute or relative to its `cwd`: the filesystem server's allowed
 *   directories; not `/`) and `writablePaths`; read-only, a file an argument names, `readOnlyPaths` and the directory of an
 *   absolute `command`;
 * - no network (its own empty network namespace) unless `network: true`;
 * - the sandbox's limits on processes and file size (not on CPU time and address space: {@link SERVER_LIMITS}).
 *
 * A long-lived server is shared by every run of the worker, so the per-run workspaces of the built-in tools do not
 * apply to it.
 */
import { readdirSync, realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { Sandbox, sandboxUnavailable } from '../tools/builtin/sandbox.js';
import { isHttpServer, type McpServers, type McpStdioServer } from './config.js';

/** What the SDK's stdio transport spawns. */
export interface McpLaunch {
  command: string;
  args: string[];
  env?: Record<string, string>;
  cwd?: string;
}

/**
 * A server's limits besides the sandbox's defaults: a year of CPU seconds (the per-command 600 would kill a busy
 * long-lived server) and 64 TiB of address space (Node's WebAssembly reserves more than the default 8 GiB: a Node server
 * using it, or `tsx`, could not start).
 */
const SERVER_LIMITS = { cpuSeconds: 365 * 24 * 3600, memoryBytes: 2 ** 46 };

/** The names of the stdio servers of `servers` that run unsandboxed. */
export function unsandboxedServers(servers: McpServers): string[] {
  return Object.entries(servers)
    .filter(([, s]) => !isHttpServer(s) && s.sandbox === false)
    .map(([name]) => name);
}

/**
 * Why the stdio servers of `servers` cannot start (one needs the sandbox and bubblewrap cannot run here), saying what
 * to do; undefined when they can.
 */
export function mcpSandboxRefusal(servers: McpServers): string | undefined {
  const boxed = Object.entries(servers)
    .filter(([, s]) => !isHttpServer(s) && s.sandbox !== false)
    .map(([name]) => `"${name}"`);
  if (boxed.length === 0) return undefined;
  const reason = sandboxUnavailable();
  if (!reason) return undefined;
  return (
    `Keel runs each stdio MCP server in a sandbox, and it cannot start: ${reason}. Install bubblewrap and allow user ` +
    'namespaces (e.g. sysctl kernel.unprivileged_userns_clone=1, or a container runtime that permits them), or run ' +
    `the server${boxed.length > 1 ? 's' : ''} ${boxed.join(', ')} unsandboxed on purpose: "sandbox": false in the ` +
    'MCP configuration, or keel worker --sandbox none.'
  );
}

/**
 * Throws {@link mcpSandboxRefusal} when the servers cannot start, and announces on stderr each server that runs
 * unsandboxed. Called when the worker is created.
 */
export function checkMcpSandbox(
  servers: McpServers,
  write: (s: string) => unknown = (s) => process.stderr.write(s),
): void {
  const refusal = mcpSandboxRefusal(servers);
  if (refusal) throw new Error(refusal);
  const open = unsandboxedServers(servers);
  if (open.length)
    write(
      `[keel] WARNING: MCP server${open.length > 1 ? 's' : ''} ${open.map((n) => `"${n}"`).join(', ')} run${open.length > 1 ? '' : 's'} unsandboxed ("sandbox": false): as the worker's user, with its files, its /proc (and so its environment) and the network.\n`,
    );
}

/** The command that starts `config`: itself, or bubblewrap running it. */
export function mcpLaunch(
  config: McpStdioServer,
  /** The SDK's default environment of a server (`getDefaultEnvironment()`). */
  defaultEnv: Record<string, string>,
  workerDir = process.cwd(),
): McpLaunch {
  const direct: McpLaunch = {
    command: config.command,
    args: config.args ?? [],
    ...(config.env ? { env: config.env } : {}),
    ...(config.cwd ? { cwd: config.cwd } : {}),
  };
  if (config.sandbox === false) return direct;
  const cwd = path.resolve(workerDir, config.cwd ?? '.');
  const readOnly: string[] = (config.readOnlyPaths ?? []).map((p) => path.resolve(workerDir, p));
  const writable: string[] = (config.writablePaths ?? []).map((p) => path.resolve(workerDir, p));
  if (path.isAbsolute(config.command)) readOnly.push(path.dirname(real(config.command)));
  for (const arg of config.args ?? []) {
    if (arg.startsWith('-') || arg === '') continue;
    const p = path.resolve(cwd, arg);
    const kind = kindOf(p);
    // the root would bring back everything the sandbox hides (the host's /proc among it): name narrower directories
    if (kind === 'dir' && p !== cwd && p !== path.parse(p).root) writable.push(p);
    else if (kind === 'file') readOnly.push(p);
  }
  const hidden =
    config.cwd === undefined
      ? [
          path.join(cwd, '.keel'),
          ...entries(cwd)
            .filter((e) => e.startsWith('.env'))
            .map((e) => path.join(cwd, e)),
        ]
      : [];
  const sandbox = new Sandbox({
    network: config.network === true ? 'host' : 'none',
    limits: SERVER_LIMITS,
  });
  // the SDK's default environment (HOME, LOGNAME, PATH, SHELL, TERM, USER) is given to bwrap, not to the server: the
  // server gets the same names with HOME its /tmp (the worker's home is not in the sandbox), then its `env`
  const env = { ...defaultEnv, HOME: '/tmp', ...config.env };
  const wrapped = sandbox.wrap(
    config.command,
    config.args ?? [],
    { workspace: cwd, workspaceReadOnly: config.cwd === undefined, readOnly, writable, hidden },
    env,
  );
  return {
    command: wrapped.file,
    args: wrapped.args,
    env: Object.fromEntries(Object.entries(wrapped.env).filter((e): e is [string, string] => e[1] !== undefined)),
  };
}

function real(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

function kindOf(p: string): 'dir' | 'file' | undefined {
  try {
    const s = statSync(p);
    return s.isDirectory() ? 'dir' : s.isFile() ? 'file' : undefined;
  } catch {
    return undefined;
  }
}

function entries(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}
