/**
 * The sandbox every process a built-in tool starts runs in (`bash` commands, `rg`, `fd`): bubblewrap (`bwrap`) with
 * new user, PID, mount, IPC and UTS namespaces (and network, unless `network: 'host'`), so the process
 *
 * - sees a read-only view of the system directories (`/usr`, `/bin`, `/lib*`, and of `/etc` only the entries a shell
 *   and common tools need, {@link ETC_ALLOWED}, with secrets inside them such as `/etc/ssl/private` masked), its run's
 *   workspace as the only writable path, a fresh `/tmp` (a tmpfs per command), and the operator's `readOnlyPaths` —
 *   not the worker's source tree, home, `.keel/`, other runs' workspaces, nor a file the worker was given as a secret
 *   (`worker-secrets.ts`: hidden wherever a bound directory holds it);
 * - has its own `/proc`: no process of the worker (nor its environment) is visible;
 * - cannot create user namespaces (`--disable-userns`) and runs under the seccomp filter of `seccomp.ts` (no
 *   namespaces, mounts, keyring, `bpf`, `ptrace`, `io_uring`, netlink, …);
 * - inherits no file descriptor of the worker but stdin, stdout and stderr (one the worker inherited without
 *   close-on-exec is closed before bubblewrap starts);
 * - starts from an environment built from an allowlist (`tool-env.ts`), never a copy of the worker's;
 * - runs under limits on CPU time, address space, processes and file size (`prlimit` inside the sandbox; when the
 *   worker runs as root, whose process count the kernel does not limit, the sandbox's PID namespace gets a `pid_max`
 *   instead, Linux ≥ 6.14), and, where the host allows it, in a cgroup of its own that bounds the whole call's memory,
 *   processes and CPU (`call-cgroup.ts`; where it does not, the worker says so once at start); its `/tmp` is a tmpfs
 *   of a bounded size;
 * - dies with the worker (`--die-with-parent`): killing the sandbox's first process kills every process in it.
 *
 * Where bubblewrap or user namespaces are unavailable, {@link resolveSandbox} throws with what to do; the operator may
 * instead say `sandbox: 'none'`, which is announced, never a silent fallback.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readlinkSync, type Stats } from 'node:fs';
import path from 'node:path';
import { detectCallCgroups, enterScript, type CallCgroup, type CallCgroups } from './call-cgroup.js';
import { launcher, PID_MAX_FD, SECCOMP_FD, seccompProgramPath, seccompUnavailable } from './sandbox-launch.js';
import { hiddenSecretFiles } from '../../../node-common/worker-secrets.js';

/** Whether a sandboxed process may use the network: `none` (its own empty network namespace) or the host's. */
export type SandboxNetwork = 'none' | 'host';

/** Resource limits of one sandboxed process tree. */
export interface SandboxLimits {
  /** CPU seconds of each process (RLIMIT_CPU). Default 600. */
  cpuSeconds?: number;
  /** Address space of each process, bytes (RLIMIT_AS). Default 8 GiB. */
  memoryBytes?: number;
  /** Processes at once (RLIMIT_NPROC inside the user namespace; as root a PID-namespace `pid_max`). Default 512. */
  processes?: number;
  /** Largest file a process may write, bytes (RLIMIT_FSIZE). Default 1 GiB. */
  fileSizeBytes?: number;
  /** Size of the sandbox's `/tmp` (a tmpfs per command), bytes. Default 256 MiB. */
  tmpBytes?: number;
  /** Memory of all of a call's processes together, its `/tmp` included (its cgroup's, no swap), bytes. Default 2 GiB. */
  callMemoryBytes?: number;
  /** CPU bandwidth of all of a call's processes together (its cgroup's), in CPUs. Default 2. */
  cpus?: number;
}

/** The sandbox of tool processes (`builtinTools({ sandbox })`). */
export interface SandboxOptions {
  /** Default `none`: no network at all. `host`: the worker's network (loopback included). */
  network?: SandboxNetwork;
  limits?: SandboxLimits;
  /** Path of the bubblewrap executable. Default `bwrap` on PATH. */
  bwrapPath?: string;
  /**
   * `false`: no cgroup per call, said once at start (`call-cgroup.ts`). Default: one where the host allows it, and
   * where it does not, the worker says so once at start.
   */
  cgroups?: boolean;
}

/** `'bwrap'` (the default, {@link SandboxOptions} defaults), options, or `'none'` (unsandboxed, announced at start). */
export type SandboxSetting = 'bwrap' | 'none' | SandboxOptions;

/** The directories one sandboxed process sees besides the system. */
export interface SandboxMounts {
  /** Bound read-write (bash) or read-only (rg, fd) at the same path; the working directory. None: no such bind. */
  workspace?: string;
  /** More paths bound read-only at the same path (`allowedRoots`, `readOnlyPaths`). */
  readOnly?: readonly string[];
  /** More paths bound read-write at the same path (`allowedRoots` of bash). */
  writable?: readonly string[];
  /** Working directory inside; default `workspace`, else `/tmp`. */
  cwd?: string;
  /** true: the workspace is bound read-only too (search tools). */
  workspaceReadOnly?: boolean;
  /** Paths inside those above hidden after binding them: a directory by an empty tmpfs, a file by an empty one. */
  hidden?: readonly string[];
}

/** What to spawn instead of `file args`, and with which environment. */
export interface WrappedCommand {
  file: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  /** The call's cgroup, when it has one: whoever spawns the command calls `release()` once it has ended. */
  cgroup?: CallCgroup;
}

/**
 * Turns `file args` with environment `env` into the command to spawn (a sandbox's {@link Sandbox.wrapper}); `keep`:
 * the descriptors above 2 the caller maps into the child (spawn's `stdio[3]` …), which the launcher must not close.
 */
export type ProcessWrapper = (
  file: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  keep?: readonly number[],
) => WrappedCommand;

const DEFAULT_LIMITS: Required<SandboxLimits> = {
  cpuSeconds: 600,
  memoryBytes: 8 * 1024 ** 3,
  processes: 512,
  fileSizeBytes: 1024 ** 3,
  tmpBytes: 256 * 1024 ** 2,
  callMemoryBytes: 2 * 1024 ** 3,
  cpus: 2,
};

/** System directories bound read-only (a symlink, as in merged-/usr systems, is recreated as a symlink). */
const SYSTEM_DIRS = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];

/**
 * The entries of `/etc` a sandboxed process sees (read-only; a symlink is recreated as one): what a shell, the C
 * library (users, name resolution, TLS roots, time zone, locales) and common tools read. Anything else of `/etc` —
 * root-only files such as `shadow`, credentials such as `npmrc` or `pip.conf`, a service's configuration — is absent.
 */
export const ETC_ALLOWED = [
  'alternatives',
  'bash.bashrc',
  'ca-certificates',
  'ca-certificates.conf',
  'crypto-policies',
  'debian_version',
  'environment',
  'fonts',
  'gai.conf',
  'gitconfig',
  'group',
  'host.conf',
  'hostname',
  'hosts',
  'inputrc',
  'issue',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'locale.alias',
  'locale.conf',
  'localtime',
  'login.defs',
  'lsb-release',
  'magic',
  'magic.mime',
  'mailcap',
  'mime.types',
  'mtab',
  'nanorc',
  'networks',
  'nsswitch.conf',
  'os-release',
  'passwd',
  'perl',
  'pki',
  'profile',
  'profile.d',
  'protocols',
  'python3',
  'resolv.conf',
  'rpc',
  'services',
  'shells',
  'ssl',
  'terminfo',
  'timezone',
  'vim',
  'wgetrc',
  'xdg',
];

/** Inside the allowed entries of `/etc`, what is masked still (a file by an empty one, a directory by an empty tmpfs). */
const ETC_SECRETS = ['ssl/private', 'pki/tls/private', 'pki/CA/private'];

const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

/** A resolved sandbox: wraps a command so that it runs inside bubblewrap. */
export class Sandbox {
  readonly network: SandboxNetwork;
  readonly limits: Required<SandboxLimits>;
  private readonly bwrap: string;
  private readonly systemArgs: string[];

  /** `cgroups`: a cgroup per wrapped command ({@link resolveSandbox} passes the host's, when it has them). */
  constructor(
    options: SandboxOptions = {},
    private readonly cgroups?: CallCgroups,
  ) {
    this.network = options.network ?? 'none';
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.bwrap = options.bwrapPath ?? 'bwrap';
    this.systemArgs = systemBinds();
  }

  /** A {@link ProcessWrapper} that runs every command inside this sandbox with `mounts`. */
  wrapper(mounts: SandboxMounts): ProcessWrapper {
    return (file, args, env, keep) => this.wrap(file, args, mounts, env, keep);
  }

  /**
   * `file args` run inside the sandbox with exactly `env`; bwrap itself is spawned with {@link spawnEnv} only (the
   * sandbox's first process keeps the environment it was started with, and `/proc/1/environ` would show it).
   */
  wrap(
    file: string,
    args: readonly string[],
    mounts: SandboxMounts,
    env: NodeJS.ProcessEnv,
    keep: readonly number[] = [],
  ): WrappedCommand {
    const seccomp = seccompProgramPath();
    const b: string[] = [
      '--unshare-user',
      '--disable-userns',
      ...(seccomp ? ['--seccomp', String(SECCOMP_FD)] : []),
      '--unshare-pid',
      '--unshare-ipc',
      '--unshare-uts',
      ...(this.network === 'none' ? ['--unshare-net'] : []),
      '--die-with-parent',
      '--new-session',
      '--hostname',
      'keel-sandbox',
      ...this.systemArgs,
      '--proc',
      '/proc',
      '--dev',
      '/dev',
    ];
    // A fresh /tmp per command, of a bounded size (the workspace, often under the host's /tmp, is bound below it).
    b.push('--size', String(this.limits.tmpBytes), '--tmpfs', '/tmp');
    // A parent before what is inside it (a later bind hides what it covers): the nested path's own mode wins.
    const binds: [string, string][] = [
      ...(mounts.readOnly ?? []).filter((p) => existsSync(p)).map((p): [string, string] => ['--ro-bind', p]),
      ...(mounts.writable ?? []).filter((p) => existsSync(p)).map((p): [string, string] => ['--bind', p]),
      ...(mounts.workspace
        ? [[mounts.workspaceReadOnly ? '--ro-bind' : '--bind', mounts.workspace] as [string, string]]
        : []),
    ];
    const depth = (p: string) => path.resolve(p).split(path.sep).length;
    for (const [flag, p] of binds.sort((x, y) => depth(x[1]) - depth(y[1]))) b.push(flag, p, p);
    const bound = binds.map(([, p]) => p);
    for (const p of [...(mounts.hidden ?? []), ...hiddenSecretFiles(bound)]) {
      let stat;
      try {
        stat = lstatSync(p);
      } catch {
        continue;
      }
      if (stat.isDirectory()) b.push('--tmpfs', p);
      else b.push('--ro-bind', '/dev/null', p);
    }
    b.push('--chdir', mounts.cwd ?? mounts.workspace ?? '/tmp', '--clearenv');
    for (const [name, value] of Object.entries(env)) if (value !== undefined) b.push('--setenv', name, value);
    const l = this.limits;
    if (!isRoot) {
      const limited = [
        'prlimit',
        `--cpu=${l.cpuSeconds}`,
        `--as=${l.memoryBytes}`,
        `--nproc=${l.processes}`,
        `--fsize=${l.fileSizeBytes}`,
        '--',
        file,
        ...args,
      ];
      return this.inCgroup(launcher(this.bwrap, [...b, '--cap-drop', 'ALL', '--', ...limited], seccomp, keep));
    }
    // As root the kernel does not count processes against RLIMIT_NPROC: bound the PID namespace instead (pid_max, at
    // least 301, written by bwrap from the launcher's descriptor, then /proc/sys bound read-only over it: the filter
    // refuses `mount` to the command), set the other limits (ulimit: -v in KiB, -f in 512-byte blocks), then drop
    // every capability (bwrap keeps them for root inside the user namespace) and run the command.
    const pidMax = Math.max(301, l.processes + 1);
    const prelude =
      `ulimit -t ${l.cpuSeconds} && ulimit -v ${Math.floor(l.memoryBytes / 1024)} && ` +
      `ulimit -f ${Math.floor(l.fileSizeBytes / 512)} && ` +
      'exec setpriv --bounding-set=-all --inh-caps=-all --ambient-caps=-all -- "$@"';
    const pid = ['--file', String(PID_MAX_FD), '/proc/sys/kernel/pid_max', '--ro-bind', '/proc/sys', '/proc/sys'];
    const at = b.indexOf('--proc') + 2;
    b.splice(at, 0, ...pid);
    return this.inCgroup(
      launcher(
        this.bwrap,
        [...b, '--', '/bin/sh', '-c', prelude, 'keel-sandbox', file, ...args],
        seccomp,
        keep,
        `${pidMax}\n`,
      ),
    );
  }

  /** `command` started inside a new cgroup of the call (a shell enters it, then execs the command), when there are. */
  private inCgroup(command: WrappedCommand): WrappedCommand {
    if (!this.cgroups) return command;
    const l = this.limits;
    const cgroup = this.cgroups.create({ memoryBytes: l.callMemoryBytes, processes: l.processes, cpus: l.cpus });
    const files = cgroup.procsFiles;
    // What the shell adds to the environment is removed again: the sandbox starts with exactly `command.env`.
    const unset = ['PWD', 'OLDPWD', 'SHLVL', '_'].filter((name) => !(name in command.env));
    return {
      file: '/bin/sh',
      args: ['-c', enterScript(files.length, unset), 'keel-cgroup', ...files, command.file, ...command.args],
      env: command.env,
      cgroup,
    };
  }
}

/** The environment bwrap itself is spawned with: nothing of the worker's but PATH. */
export function spawnEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin' };
}

function systemBinds(): string[] {
  const out: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    const stat = lstatOrUndefined(dir);
    if (!stat) continue;
    if (stat.isSymbolicLink()) out.push('--symlink', readlinkSync(dir), dir);
    else if (stat.isDirectory()) out.push('--ro-bind', dir, dir);
  }
  out.push('--tmpfs', '/etc');
  for (const entry of ETC_ALLOWED) {
    const p = path.join('/etc', entry);
    const stat = lstatOrUndefined(p);
    if (!stat) continue;
    if (stat.isSymbolicLink()) out.push('--symlink', readlinkSync(p), p);
    else out.push('--ro-bind', p, p);
  }
  for (const entry of ETC_SECRETS) {
    const p = path.join('/etc', entry);
    const stat = lstatOrUndefined(p);
    if (!stat) continue;
    if (stat.isDirectory()) out.push('--tmpfs', p);
    else out.push('--ro-bind', '/dev/null', p);
  }
  out.push('--remount-ro', '/etc');
  return out;
}

const probed = new Map<string, string | undefined>();

/**
 * Why a sandbox cannot run here (bubblewrap missing, user namespaces refused, not Linux), or undefined when it can.
 * Runs `bwrap … true` once per executable path.
 */
export function sandboxUnavailable(bwrapPath = 'bwrap'): string | undefined {
  if (probed.has(bwrapPath)) return probed.get(bwrapPath);
  let reason: string | undefined;
  if (process.platform !== 'linux') reason = `bubblewrap needs Linux (this is ${process.platform})`;
  else {
    const sandbox = new Sandbox({ bwrapPath });
    const { file, args, env } = sandbox.wrap(
      '/bin/sh',
      ['-c', 'exit 0'],
      { workspace: '/', workspaceReadOnly: true },
      {},
    );
    const r = spawnSync(file, args, { encoding: 'utf8', env, timeout: 10_000 });
    // the launcher shell (sandbox-launch.ts) exits 127 when it cannot exec bwrap
    if ((r.error as NodeJS.ErrnoException | undefined)?.code === 'ENOENT' || r.status === 127)
      reason = `${bwrapPath} is not installed (Debian/Ubuntu: apt-get install bubblewrap)`;
    else if (r.error) reason = `${bwrapPath} failed: ${r.error.message}`;
    else if (/Unknown option --disable-userns/.test(r.stderr))
      reason = `${bwrapPath} is older than bubblewrap 0.8.0, which the sandbox needs (--disable-userns)`;
    else if (r.status !== 0)
      reason = `${bwrapPath} cannot create the sandbox's namespaces here: ${(r.stderr || `exit ${r.status}`).trim()}`;
  }
  probed.set(bwrapPath, reason);
  return reason;
}

/** The message of a worker that refuses to start its tools without a sandbox. */
export function sandboxRefusal(reason: string): string {
  return (
    `Keel's built-in tools run every process in a sandbox, and it cannot start: ${reason}. ` +
    'Install bubblewrap and allow user namespaces (e.g. sysctl kernel.unprivileged_userns_clone=1, or a container ' +
    "runtime that permits them), or run tool processes unsandboxed on purpose: builtinTools({ sandbox: 'none' }) / " +
    'keel worker --sandbox none.'
  );
}

/** The warning printed once when tools run without a sandbox. */
export const UNSANDBOXED_WARNING =
  "[keel] WARNING: sandbox 'none': tool processes (bash, rg, fd) run unsandboxed as the worker's user — they can read " +
  "the worker's files, its /proc (and so its environment) and the network. Use only with trusted models and inputs.";

/**
 * The sandbox for `setting` (default `'bwrap'`), or undefined for `'none'` (after printing {@link UNSANDBOXED_WARNING}
 * once). Throws {@link sandboxRefusal} when bubblewrap cannot run here.
 */
export function resolveSandbox(setting: SandboxSetting | undefined): Sandbox | undefined {
  if (setting === 'none') {
    warnUnsandboxed();
    return undefined;
  }
  const options = setting === undefined || setting === 'bwrap' ? {} : setting;
  const reason = sandboxUnavailable(options.bwrapPath);
  if (reason) throw new Error(sandboxRefusal(reason));
  if (options.network === 'host') warnOnce(HOST_NETWORK_WARNING);
  const noFilter = seccompUnavailable();
  if (noFilter) warnOnce(`[keel] WARNING: ${noFilter}: tool processes run in the sandbox without a syscall filter.`);
  return new Sandbox(options, callCgroups(options.cgroups !== false));
}

let cgroupsFound: CallCgroups | string | undefined;
let cgroupsWarned = false;

/**
 * The host's call cgroups (detected once per process), or undefined after printing {@link noCgroupWarning} once:
 * when the host does not allow them, or `wanted` is false.
 */
function callCgroups(wanted: boolean): CallCgroups | undefined {
  const found = wanted ? (cgroupsFound ??= detectCallCgroups()) : 'turned off (sandbox: { cgroups: false })';
  if (typeof found !== 'string') return found;
  if (!cgroupsWarned) process.stderr.write(`${noCgroupWarning(found)}\n`);
  cgroupsWarned = true;
  return undefined;
}

/** The warning printed once when tool calls get no cgroup of their own: `reason` says why. */
export function noCgroupWarning(reason: string): string {
  return (
    `[keel] WARNING: no cgroup per tool call: ${reason}. Each sandboxed process keeps its own limits (CPU time, ` +
    'address space, file size, processes), but the processes of one call are not bounded together in memory, ' +
    'processes or CPU.'
  );
}

/** The warning printed once when tool processes get the host's network (`network: 'host'`). */
export const HOST_NETWORK_WARNING =
  "[keel] WARNING: sandbox network 'host': tool processes reach the network and every service listening on this " +
  "host's loopback — the Temporal frontend, a codec server, local databases — as any local process can. The default " +
  "'none' gives them no network.";

const warned = new Set<string>();
function warnOnce(text: string): void {
  if (warned.has(text)) return;
  warned.add(text);
  process.stderr.write(`${text}\n`);
}
function warnUnsandboxed(): void {
  warnOnce(UNSANDBOXED_WARNING);
}

/** `lstat` of `p`, or undefined when it does not exist (or cannot be read). */
function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}
