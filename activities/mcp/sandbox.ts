/**
 * How a stdio MCP server is started: inside the bubblewrap sandbox of the built-in tools
 * (`activities/tools/builtin/sandbox.ts`), one sandbox per server, unless its configuration says `sandbox: false`.
 *
 * A sandboxed server sees the system read-only (of `/etc` only what common tools need), its own `/proc` (no process of
 * the worker, so not the worker's environment), a fresh `/tmp` (its `HOME` unless `env` sets one), and:
 *
 * - its `cwd` read-write; without `cwd` it starts in its empty `/tmp` and sees no directory of the worker's;
 * - read-only: the file or directory each argument names (absolute, or relative to its `cwd`, else to the worker's
 *   directory — then passed as an absolute path), the directory of its command's real path, the `node_modules`
 *   directories above those (where Node looks for their packages), and `readOnlyPaths`;
 * - read-write: `writablePaths` (an argument inside one is writable through it);
 * - never a system directory (`/`, `/proc`, `/sys`, `/dev`, `/run`, `/etc`, `/boot`) nor, from an argument, the worker's
 *   directory or one above it: naming one fails the server's start saying what to do; nor a file the worker was given
 *   as a secret (`node-common/worker-secrets.ts`: hidden wherever a bound directory holds it);
 * - no network (its own empty network namespace) unless `network: true`;
 * - the sandbox's limits on processes and file size (not on CPU time and address space: {@link SERVER_LIMITS}).
 *
 * A command (or a `#!` script's interpreter) the sandbox would not see — e.g. under a symlinked `node_modules` — fails
 * the start naming the path and what to add. A long-lived server is shared by every run of the worker, so the per-run
 * workspaces of the built-in tools do not apply to it.
 */
import { closeSync, openSync, readSync, realpathSync, statSync } from 'node:fs';
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

/** Directories never bound into a server's sandbox from its configuration: the root and the kernel's and runtime's. */
const SYSTEM_PATHS = ['/', '/proc', '/sys', '/dev', '/run', '/var/run', '/boot', '/etc'];
const UNDER_SYSTEM = ['/proc', '/sys', '/dev', '/run', '/var/run'];

const within = (p: string, dir: string) => p === dir || p.startsWith(dir === '/' ? '/' : `${dir}/`);

/**
 * Why `p` may not be bound (a system directory; with `workerDir`, also that directory or one above it), else
 * undefined.
 */
function unbindable(p: string, workerDir?: string): string | undefined {
  if (SYSTEM_PATHS.includes(p) || UNDER_SYSTEM.some((d) => within(p, d))) return 'a system directory';
  if (workerDir !== undefined && within(workerDir, p)) return "the worker's directory or one above it";
  return undefined;
}

/** An operator error about a server (its connection error says which: `cannot connect to MCP server "x": …`). */
function launchError(problem: string): Error {
  return new Error(problem);
}

/**
 * The command that starts `config`: itself, or bubblewrap running it. Throws, saying what to change,
 * when its configuration names a directory that is never bound (a system directory, the worker's own directory) or its
 * command resolves to a file the sandbox would not see.
 */
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
  const cwd = config.cwd === undefined ? undefined : path.resolve(workerDir, config.cwd);
  const configured = (list: 'readOnlyPaths' | 'writablePaths') =>
    (config[list] ?? []).map((p) => {
      const abs = path.resolve(workerDir, p);
      const why = unbindable(abs);
      if (why)
        throw launchError(
          `"${list}" names ${abs}, ${why}, which is never bound into its sandbox: name a narrower directory`,
        );
      return abs;
    });
  const readOnly = configured('readOnlyPaths');
  const writable = configured('writablePaths');
  const rw = [...writable, ...(cwd ? [cwd] : [])];
  const args = (config.args ?? []).map((arg) => {
    if (arg.startsWith('-') || arg === '') return arg;
    const p = path.resolve(cwd ?? workerDir, arg);
    const kind = kindOf(p);
    if (kind === undefined || p === cwd) return arg;
    if (kind === 'dir') {
      const why = unbindable(p, workerDir);
      if (why)
        throw launchError(
          `its argument ${JSON.stringify(arg)} names ${p}, ${why}, which is never bound into its sandbox: name a ` +
            'narrower directory (to give it the worker\'s directory on purpose, set "cwd")',
        );
    }
    // read-only unless a writable path holds it; its dependencies (node_modules above its real path) read-only too
    if (!rw.some((d) => within(p, d))) readOnly.push(p);
    readOnly.push(...packageDirs(real(p)));
    // the server starts elsewhere (its /tmp, without "cwd"): a path relative to the worker's directory goes absolute
    return cwd ? arg : p;
  });
  const command = resolveCommand(config.command, cwd ?? workerDir);
  if (!command)
    throw launchError(
      `its command ${JSON.stringify(config.command)} is neither a file nor found on the worker's PATH: give its path ` +
        '(absolute, or relative to "cwd" or else to the worker\'s directory)',
    );
  if (path.isAbsolute(command)) readOnly.push(path.dirname(real(command)), ...packageDirs(real(command)));
  const sandbox = new Sandbox({ network: config.network === true ? 'host' : 'none', limits: SERVER_LIMITS });
  // the SDK's default environment (HOME, LOGNAME, PATH, SHELL, TERM, USER) is given to bwrap, not to the server: the
  // server gets the same names with HOME its /tmp (the worker's home is not in the sandbox), then its `env`
  const env = { ...defaultEnv, HOME: '/tmp', ...config.env };
  const mounts = { ...(cwd ? { workspace: cwd } : { cwd: '/tmp' }), readOnly: outermost(readOnly), writable };
  checkVisible(config.command, command, [...readOnly, ...rw]);
  // by its real path: a symlink (node_modules/.bin) may sit in a directory the sandbox does not bind
  const wrapped = sandbox.wrap(real(command), args, mounts, env);
  return {
    command: wrapped.file,
    args: wrapped.args,
    env: Object.fromEntries(Object.entries(wrapped.env).filter((e): e is [string, string] => e[1] !== undefined)),
  };
}

/** The system directories every sandbox binds (`sandbox.ts`). */
const SYSTEM_BOUND = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * Throws when `resolved` (the command, found on the worker's PATH or by its path) is a file the sandbox would not see
 * at its real path — e.g. under a symlinked `node_modules` pointing outside what is bound — naming it and the fix.
 */
function checkVisible(command: string, resolved: string, bound: string[]): void {
  const target = real(resolved);
  const seen = [...SYSTEM_BOUND.map(real), ...bound];
  const interpreter = shebang(target);
  if (interpreter && !seen.some((d) => within(real(interpreter), d)))
    throw launchError(
      `its command ${JSON.stringify(command)} is a script for ${interpreter} (${real(interpreter)}), which its sandbox ` +
        `does not see: add ${JSON.stringify(path.dirname(real(interpreter)))} to its "readOnlyPaths", or give the ` +
        'interpreter\'s absolute path as "command" and the script as its first argument',
    );
  if (seen.some((d) => within(target, d))) return;
  throw launchError(
    `its command ${JSON.stringify(command)} resolves to ${target}, which its sandbox does not see: add ` +
      `${JSON.stringify(path.dirname(target))} (or the directory it is installed in) to its "readOnlyPaths", or set "cwd"`,
  );
}

/** The interpreter of a `#!` script at `file` (for `#!/usr/bin/env name`, `name` found on PATH), or undefined. */
function shebang(file: string): string | undefined {
  let head = '';
  try {
    const fd = openSync(file, 'r');
    try {
      const buf = Buffer.alloc(256);
      head = buf.subarray(0, readSync(fd, buf, 0, 256, 0)).toString('latin1');
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
  const m = /^#!\s*(\S+)(?:[ \t]+(?:-S[ \t]+)?(\S+))?/.exec(head);
  if (!m) return undefined;
  if (path.basename(m[1]) === 'env' && m[2]) return resolveCommand(m[2], '/') ?? m[2];
  return m[1];
}

/** `paths` without those inside another of them. */
function outermost(paths: string[]): string[] {
  const unique = [...new Set(paths)];
  return unique.filter((p) => !unique.some((q) => q !== p && within(p, q)));
}

/** `command` as a path: itself when it names one (relative to `base`), else found on the worker's PATH; or undefined. */
function resolveCommand(command: string, base: string): string | undefined {
  if (command.includes('/')) return path.resolve(base, command);
  for (const dir of (process.env.PATH ?? '').split(':').filter(Boolean)) {
    const p = path.join(dir, command);
    if (kindOf(p) === 'file') return p;
  }
  return undefined;
}

/**
 * What Node needs to run a program at `file` besides the file: the nearest `package.json` above it (its module type)
 * and the `node_modules` directories a package is resolved from (one in each directory above it, up to the first that
 * holds `file` itself) — bound read-only, never the directories holding them.
 */
function packageDirs(file: string): string[] {
  const out: string[] = [];
  let manifest = false;
  let dir = path.dirname(file);
  for (;;) {
    if (path.basename(dir) === 'node_modules') {
      out.push(dir);
      break;
    }
    if (!manifest && kindOf(path.join(dir, 'package.json')) === 'file') {
      out.push(path.join(dir, 'package.json'));
      manifest = true;
    }
    const nm = path.join(dir, 'node_modules');
    if (kindOf(nm) === 'dir') out.push(nm);
    const up = path.dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  return out.filter((d) => !SYSTEM_BOUND.some((s) => within(d, s)));
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
