/**
 * Ties the Temporal dev server's life to this process (issue 10 item 8). The SDK starts `temporal server start-dev` as
 * a child and stops it on teardown, but a parent killed with SIGKILL leaves it running (reparented to PID 1, its port
 * held). Node cannot set `PR_SET_PDEATHSIG`, so, as the bash tool does for its commands, a small watchdog shell holds a
 * lifeline pipe from this process: EOF without "ok" (this process died) makes it SIGKILL the server.
 *
 * Linux only (the server's pid is found through `/proc`); elsewhere it does nothing.
 */
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';

/** Pids of this process's children whose command line contains `start-dev` (the dev server). */
export function devServerPids(parent: number = process.pid): number[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // "<pid> (<comm>) <state> <ppid> …": comm may contain spaces and parentheses, so split after the last ")".
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid !== parent) continue;
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0');
      if (cmdline.includes('start-dev')) pids.push(Number(entry));
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  return pids;
}

export interface Lifeline {
  /** The watchdog's pid (undefined when nothing is watched). */
  readonly watchdogPid: number | undefined;
  /** The process ends normally: the watchdog leaves the server alone and exits. Idempotent. */
  release(): void;
}

/**
 * Starts a detached watchdog that SIGKILLs `pids` when this process dies without calling `release()` first. It holds
 * nothing open that keeps this process alive.
 */
export function killWithThisProcess(pids: number[]): Lifeline {
  if (pids.length === 0) return { watchdogPid: undefined, release() {} };
  const script = 'read -r _ <&3 || kill -KILL "$@" 2>/dev/null';
  const watchdog = spawn('/bin/sh', ['-c', script, 'keel-dev-server-watchdog', ...pids.map(String)], {
    detached: true, // its own process group: a Ctrl-C to this one does not kill it before it can act
    stdio: ['ignore', 'ignore', 'ignore', 'pipe'],
  });
  watchdog.on('error', () => {});
  watchdog.unref();
  const pipe = watchdog.stdio[3] as Writable & { unref?: () => void };
  pipe.on('error', () => {});
  pipe.unref?.();
  let released = false;
  return {
    watchdogPid: watchdog.pid,
    release() {
      if (released) return;
      released = true;
      pipe.end('ok\n');
    },
  };
}
