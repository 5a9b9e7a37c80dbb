/**
 * Who holds a TCP port or a file (issue 20 items 5 and 6): `startDevServer` checks its ports and its SQLite file before
 * it starts a dev server. The SDK's readiness check only dials the port, so a server that failed with `bind: address
 * already in use` looked "up" when something else answered there; and two dev servers on one SQLite file fail with
 * SQLITE_BUSY and screens of Go stack traces.
 *
 * A holder is found as `ss -ltnp` and `fuser` do: the listening socket's inode from `/proc/net/tcp{,6}`, then which
 * process has that socket (or the file) open in `/proc/<pid>/fd`. Linux only, and only for processes this user may
 * inspect; elsewhere the holder is "another process" (ports) or not found (files).
 */
import { readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { createServer } from 'node:net';

/** Whether `host:port` can be bound now (false: EADDRINUSE / EACCES; the probe is closed again at once). */
export function portIsFree(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen({ port, host, exclusive: true }, () => probe.close(() => resolve(true)));
  });
}

/** The inodes of sockets listening on `port` (any address, IPv4 and IPv6). */
function listeningInodes(port: number): Set<string> {
  const inodes = new Set<string>();
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let table: string;
    try {
      table = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const line of table.split('\n').slice(1)) {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== '0A') continue; // 0A: LISTEN
      if (Number.parseInt(f[1].split(':')[1], 16) === port) inodes.add(f[9]);
    }
  }
  return inodes;
}

export interface Holder {
  pid: number;
  /** The command line, arguments joined by spaces (cut at 100 characters). */
  command: string;
  /** For a Temporal dev server (`… start-dev …`), the process that started it (e.g. `keel dev`), if not init. */
  parent?: { pid: number; command: string };
}

function commandLine(pid: number | string): string {
  try {
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter(Boolean).join(' ');
    return command.length > 100 ? `${command.slice(0, 99)}…` : command;
  } catch {
    return ''; // gone meanwhile
  }
}

function parentOf(pid: number | string): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // "<pid> (<comm>) <state> <ppid> …": comm may contain spaces and parentheses, so split after the last ")"
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    return ppid > 1 ? ppid : undefined;
  } catch {
    return undefined;
  }
}

/** The first process other than this one with an open descriptor whose link target satisfies `match`. */
function processWith(match: (target: string) => boolean): Holder | undefined {
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((e) => /^\d+$/.test(e) && Number(e) !== process.pid);
  } catch {
    return undefined;
  }
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or not ours to read
    }
    for (const fd of fds) {
      let target: string;
      try {
        target = readlinkSync(`/proc/${pid}/fd/${fd}`);
      } catch {
        continue;
      }
      if (!match(target)) continue;
      const command = commandLine(pid);
      const ppid = / start-dev( |$)/.test(command) ? parentOf(pid) : undefined;
      return {
        pid: Number(pid),
        command,
        ...(ppid !== undefined ? { parent: { pid: ppid, command: commandLine(ppid) } } : {}),
      };
    }
  }
  return undefined;
}

/** The process listening on `port`, when `/proc` tells (Linux, a process this user can inspect); else undefined. */
export function portHolder(port: number): Holder | undefined {
  const inodes = listeningInodes(port);
  if (inodes.size === 0) return undefined;
  return processWith((target) => {
    const m = /^socket:\[(\d+)\]$/.exec(target);
    return m !== null && inodes.has(m[1]);
  });
}

/** Another process that has `file` open (e.g. a dev server on that SQLite file); undefined when none is found. */
export function fileHolder(file: string): Holder | undefined {
  let path: string;
  try {
    path = realpathSync(file);
  } catch {
    return undefined; // no such file: nobody holds it
  }
  return processWith((target) => target === path || target === `${path}-wal` || target === `${path}-shm`);
}

/** `pid 123 (temporal server start-dev …)`, and for a dev server `, started by pid 100 (node … keel.mjs dev)`. */
export function describeHolder(holder: Holder): string {
  const one = (h: { pid: number; command: string }) => (h.command ? `pid ${h.pid} (${h.command})` : `pid ${h.pid}`);
  return `${one(holder)}${holder.parent ? `, started by ${one(holder.parent)}` : ''}`;
}

/**
 * Thrown by `startDevServer` when a port or the SQLite file it was given is taken; the message is one line naming the
 * resource and its holder (`Port 7233 (gRPC) is in use by pid 123 (…)`, `.keel/dev.db is in use by pid 123 (…)`).
 */
export class ResourceInUseError extends Error {
  constructor(
    /** `Port 7233 (gRPC)`, or the file's path. */
    readonly resource: string,
    /** `pid 123 (…)` or `another process`. */
    readonly holder: string,
    readonly pid: number | undefined,
  ) {
    super(`${resource} is in use by ${holder}`);
    this.name = 'ResourceInUseError';
  }
}
