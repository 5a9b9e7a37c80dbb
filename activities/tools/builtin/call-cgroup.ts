/**
 * A cgroup per tool call (issue 33 item 4): the sandbox's `prlimit` limits are per process, so six processes of 180 MiB
 * each ran under a 256 MiB limit. Where the host allows it, every sandboxed command (a `bash` call, an `rg` or `fd`)
 * starts inside a cgroup of its own that bounds the whole call: its memory (`tmpfs` pages of its `/tmp` included, no
 * swap), its processes at once and its CPU bandwidth.
 *
 * The cgroups are made below the worker's own cgroup (never above it: a call cannot escape what bounds the worker):
 *
 * - cgroup v2 (`/sys/fs/cgroup` a `cgroup2` mount with `memory`, `pids` and `cpu` available): the worker moves itself
 *   into `<own>/keel-worker` (a cgroup that holds processes cannot hand controllers to children), enables the
 *   controllers in `<own>` and makes `<own>/keel-calls/call-<n>`. This needs `<own>` writable and holding no other
 *   process: a systemd unit with `Delegate=yes`, or a container whose cgroup is its own (`--cgroupns=private`, root).
 * - cgroup v1 (separate `memory`, `pids` and `cpu` hierarchies, as on this project's CI): `<own>/keel-<pid>/call-<n>` in
 *   each of the three.
 *
 * A call's cgroup is entered before bubblewrap starts (a `/bin/sh` writes its own PID into `cgroup.procs`, then
 * `exec`s the sandbox), so no process of the call ever runs outside it; it is emptied and removed when the call ends.
 * Where none of this is possible, {@link detectCallCgroups} says why, and the worker says so once at start.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** What one call's cgroup bounds. */
export interface CallCgroupLimits {
  /** Memory of all the call's processes together (and its tmpfs pages), bytes; no swap. */
  memoryBytes: number;
  /** Processes (and threads) at once. */
  processes: number;
  /** CPU bandwidth, in CPUs (1.5 = one and a half cores). */
  cpus: number;
}

/** One call's cgroup, made by {@link CallCgroups.create}. */
export interface CallCgroup {
  /** The `cgroup.procs` files the call's first process writes its PID into (one per hierarchy). */
  readonly procsFiles: readonly string[];
  /** Whether the kernel killed a process of the call for exceeding {@link CallCgroupLimits.memoryBytes}. */
  oomKilled(): boolean;
  /** Kills what is left of the call and removes its cgroup (retried while the kernel still empties it). */
  release(): Promise<void>;
}

/** Where the cgroup files are: the defaults are the host's; tests point them elsewhere. */
export interface CgroupPaths {
  mountinfo?: string;
  selfCgroup?: string;
}

const CONTROLLERS = ['memory', 'pids', 'cpu'] as const;
const CPU_PERIOD_US = 100_000;

interface Mount {
  root: string;
  mountpoint: string;
  fstype: string;
  superOptions: string[];
}

function readMounts(file: string): Mount[] {
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [before, after = ''] = line.split(' - ');
      const f = before.split(' ');
      const [fstype, , superOptions = ''] = after.split(' ');
      return { root: f[3], mountpoint: f[4], fstype, superOptions: superOptions.split(',') };
    });
}

/** `own` (a path of /proc/self/cgroup) inside `mount`, as a directory of this host. */
function dirOf(mount: Mount, own: string): string {
  const rel = mount.root !== '/' && own.startsWith(mount.root) ? own.slice(mount.root.length) : own;
  return path.join(mount.mountpoint, rel);
}

/** A way to make call cgroups (one backend per cgroup version). */
interface Backend {
  readonly version: 'v1' | 'v2';
  /** The directories a call's cgroup is made in, one per hierarchy. */
  parents: string[];
  setLimits(dirs: string[], limits: CallCgroupLimits): void;
  oomKills(dirs: string[]): number;
  kill(dirs: string[]): void;
}

let counter = 0;

/** Makes a cgroup per call on a host that allows it; see the module comment. */
export class CallCgroups {
  constructor(private readonly backend: Backend) {}

  /** `v1` or `v2`. */
  get version(): 'v1' | 'v2' {
    return this.backend.version;
  }

  /** A new cgroup with `limits`; throws when the host refuses it (then the call is not started). */
  create(limits: CallCgroupLimits): CallCgroup {
    const name = `call-${++counter}`;
    const dirs = this.backend.parents.map((p) => path.join(p, name));
    for (const d of dirs) mkdirSync(d);
    try {
      this.backend.setLimits(dirs, limits);
    } catch (error) {
      for (const d of dirs) rmdirQuietly(d);
      throw error;
    }
    const backend = this.backend;
    return {
      procsFiles: dirs.map((d) => path.join(d, 'cgroup.procs')),
      oomKilled: () => backend.oomKills(dirs) > 0,
      release: async () => {
        for (let attempt = 0; attempt < 40; attempt++) {
          backend.kill(dirs);
          if (dirs.every((d) => rmdirQuietly(d))) return;
          await new Promise((r) => setTimeout(r, 50));
        }
      },
    };
  }
}

/** rmdir; true when the directory is gone. */
function rmdirQuietly(dir: string): boolean {
  try {
    rmdirSync(dir);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'ENOENT';
  }
}

function readNumber(file: string, key: string): number {
  try {
    const line = readFileSync(file, 'utf8')
      .split('\n')
      .find((l) => l.startsWith(`${key} `));
    return line ? Number(line.split(' ')[1]) : 0;
  } catch {
    return 0;
  }
}

function killProcs(dir: string): void {
  let pids: string[];
  try {
    pids = readFileSync(path.join(dir, 'cgroup.procs'), 'utf8').split('\n').filter(Boolean);
  } catch {
    return;
  }
  for (const pid of pids) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // gone
    }
  }
}

function v2Backend(mounts: Mount[], selfLines: string[]): Backend | string {
  const mount = mounts.find((m) => m.fstype === 'cgroup2');
  const own = selfLines.find((l) => l.startsWith('0::'))?.slice(3);
  if (!mount || own === undefined) return 'no cgroup v2 hierarchy';
  const ownDir = dirOf(mount, own);
  const available = readFileSync(path.join(ownDir, 'cgroup.controllers'), 'utf8').trim().split(/\s+/);
  const missing = CONTROLLERS.filter((c) => !available.includes(c));
  if (missing.length > 0)
    return `cgroup v2 at ${mount.mountpoint} does not offer the ${missing.join(', ')} controller(s) to ${ownDir}`;
  const enable = (dir: string) =>
    writeFileSync(path.join(dir, 'cgroup.subtree_control'), CONTROLLERS.map((c) => `+${c}`).join(' '));
  try {
    const leaf = path.join(ownDir, 'keel-worker');
    if (!existsSync(leaf)) mkdirSync(leaf);
    writeFileSync(path.join(leaf, 'cgroup.procs'), String(process.pid));
    enable(ownDir);
    const calls = path.join(ownDir, 'keel-calls');
    if (!existsSync(calls)) mkdirSync(calls);
    enable(calls);
    return {
      version: 'v2',
      parents: [calls],
      setLimits([dir], l) {
        writeFileSync(path.join(dir, 'memory.max'), String(l.memoryBytes));
        if (existsSync(path.join(dir, 'memory.swap.max'))) writeFileSync(path.join(dir, 'memory.swap.max'), '0');
        writeFileSync(path.join(dir, 'pids.max'), String(l.processes));
        writeFileSync(path.join(dir, 'cpu.max'), `${Math.round(l.cpus * CPU_PERIOD_US)} ${CPU_PERIOD_US}`);
      },
      oomKills: ([dir]) => readNumber(path.join(dir, 'memory.events'), 'oom_kill'),
      kill([dir]) {
        try {
          writeFileSync(path.join(dir, 'cgroup.kill'), '1');
        } catch {
          killProcs(dir);
        }
      },
    };
  } catch (error) {
    return (
      `cannot delegate ${ownDir} (${(error as NodeJS.ErrnoException).code ?? String(error)}): run the worker in a ` +
      'cgroup of its own that it may write (systemd Delegate=yes, or a container with its own cgroup namespace)'
    );
  }
}

/** Removes the empty `keel-<pid>` cgroups (and their call cgroups) of workers that are gone (killed, not exited). */
function removeStale(parent: string): void {
  for (const name of readdirSync(parent)) {
    const pid = /^keel-(\d+)$/.exec(name)?.[1];
    if (!pid || Number(pid) === process.pid || alive(Number(pid))) continue;
    const dir = path.join(parent, name);
    for (const call of readdirSync(dir).filter((n) => n.startsWith('call-'))) rmdirQuietly(path.join(dir, call));
    rmdirQuietly(dir);
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function v1Backend(mounts: Mount[], selfLines: string[]): Backend | string {
  const dirs: string[] = [];
  for (const controller of CONTROLLERS) {
    const mount = mounts.find((m) => m.fstype === 'cgroup' && m.superOptions.includes(controller));
    const own = selfLines
      .map((l) => l.split(':'))
      .find((f) => f.length >= 3 && f[1].split(',').includes(controller))
      ?.slice(2)
      .join(':');
    if (!mount || own === undefined) return `no cgroup v1 ${controller} hierarchy`;
    dirs.push(path.join(dirOf(mount, own), `keel-${process.pid}`));
  }
  try {
    for (const d of dirs) removeStale(path.dirname(d));
    for (const d of dirs) if (!existsSync(d)) mkdirSync(d);
  } catch (error) {
    return `cannot create ${dirs.join(', ')} (${(error as NodeJS.ErrnoException).code ?? String(error)})`;
  }
  process.once('exit', () => dirs.forEach(rmdirQuietly));
  return {
    version: 'v1',
    parents: dirs,
    setLimits([memory, pids, cpu], l) {
      writeFileSync(path.join(memory, 'memory.limit_in_bytes'), String(l.memoryBytes));
      const memsw = path.join(memory, 'memory.memsw.limit_in_bytes');
      if (existsSync(memsw)) writeFileSync(memsw, String(l.memoryBytes));
      writeFileSync(path.join(pids, 'pids.max'), String(l.processes));
      writeFileSync(path.join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      writeFileSync(path.join(cpu, 'cpu.cfs_quota_us'), String(Math.round(l.cpus * CPU_PERIOD_US)));
    },
    oomKills: ([memory]) => readNumber(path.join(memory, 'memory.oom_control'), 'oom_kill'),
    kill: (all) => all.forEach(killProcs),
  };
}

/**
 * The call cgroups this host allows (v2 first, then v1), or why there are none (a sentence for the worker's start
 * message). Creates the parent cgroups (and, on v2, moves the worker into its leaf) on success.
 */
export function detectCallCgroups(paths: CgroupPaths = {}): CallCgroups | string {
  if (process.platform !== 'linux') return `cgroups need Linux (this is ${process.platform})`;
  let mounts: Mount[];
  let selfLines: string[];
  try {
    mounts = readMounts(paths.mountinfo ?? '/proc/self/mountinfo');
    selfLines = readFileSync(paths.selfCgroup ?? '/proc/self/cgroup', 'utf8')
      .split('\n')
      .filter(Boolean);
  } catch (error) {
    return `cannot read the process's cgroups (${String(error)})`;
  }
  const reasons: string[] = [];
  for (const make of [v2Backend, v1Backend]) {
    let backend: Backend | string;
    try {
      backend = make(mounts, selfLines);
    } catch (error) {
      backend = String((error as Error).message ?? error);
    }
    if (typeof backend !== 'string') return new CallCgroups(backend);
    reasons.push(backend);
  }
  return reasons.join('; ');
}

/**
 * The `/bin/sh` script that enters a call's cgroup: `$1`…`$n` are the `cgroup.procs` files, then the command. The
 * names in `unset` (what the shell itself adds to the environment: `PWD`, `SHLVL`, …) are removed before the command
 * runs, so it gets exactly the environment it was spawned with.
 */
export function enterScript(files: number, unset: readonly string[] = []): string {
  const writes = Array.from({ length: files }, (_, i) => `echo $$ > "$${i + 1}"`).join(' && ');
  const env = unset.length > 0 ? `env ${unset.map((n) => `-u ${n}`).join(' ')} ` : '';
  return `${writes} && shift ${files} && exec ${env}"$@"`;
}
