/** CPU time of processes from /proc (the worker processes, and the dev server the SDK's native bridge spawned). */
import { readdirSync, readFileSync } from 'node:fs';

/** Pid of this process's child whose command is `comm` (the dev server is spawned by the SDK's native bridge). */
export function childPid(comm: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (name === comm && ppid === process.pid) return Number(entry);
    } catch {
      // gone
    }
  }
  return undefined;
}

/** User + system CPU of a process, in ms (clock ticks of 10 ms). */
export function procCpuMs(pid: number | undefined): number {
  if (!pid) return NaN;
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}
