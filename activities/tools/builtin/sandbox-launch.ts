/**
 * How bubblewrap is started (`sandbox.ts`): through a short shell on the host that
 *
 * - closes every descriptor the worker holds without close-on-exec besides 0-2 (ones it inherited, such as a shell's
 *   `200>file`): neither bubblewrap, nor its init in the sandbox (whose `/proc/1/fd` the command could open), nor the
 *   command gets them;
 * - opens the seccomp program (`seccomp.ts`, written once per worker to a private file) on {@link SECCOMP_FD} for
 *   `--seccomp`, and, as root, the PID namespace's `pid_max` on {@link PID_MAX_FD} for `--file`;
 * - then `exec`s bubblewrap (same PID: `--die-with-parent` and the callers' signals still reach it).
 */
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { seccompFilter } from './seccomp.js';
import type { WrappedCommand } from './sandbox.js';

/** The descriptor bubblewrap reads the seccomp program from. */
export const SECCOMP_FD = 9;
/** The descriptor bubblewrap reads the sandbox's `pid_max` from (root only). */
export const PID_MAX_FD = 8;

/** The environment the launcher and bwrap are spawned with: nothing of the worker's but PATH. */
function launchEnv(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH ?? '/usr/bin:/bin' };
}

let programPath: string | null | undefined;

/**
 * The file holding this architecture's seccomp program (written on first use, again if something removed it), or
 * undefined where the filter is not built (neither x86_64 nor aarch64; {@link seccompUnavailable} says so).
 */
export function seccompProgramPath(): string | undefined {
  if (programPath === null) return undefined;
  if (programPath && existsSync(programPath)) return programPath;
  const program = seccompFilter();
  if (!program) {
    programPath = null;
    return undefined;
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'keel-seccomp-'));
  programPath = path.join(dir, `filter-${process.arch}.bpf`);
  writeFileSync(programPath, program, { mode: 0o444 });
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return programPath;
}

/** Why tool processes run without the seccomp filter here, or undefined when they run with it. */
export function seccompUnavailable(): string | undefined {
  return seccompFilter() ? undefined : `no seccomp filter is built for ${process.arch} (only x64 and arm64)`;
}

/**
 * The descriptors above 2 this process holds without close-on-exec (`flags` of `/proc/self/fdinfo/N`): every child
 * would inherit them.
 */
export function inheritableFds(): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return [];
  }
  const out: number[] = [];
  for (const name of names) {
    const fd = Number(name);
    if (!(fd > 2)) continue;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
      if (flags !== undefined && (parseInt(flags, 8) & 0o2000000) === 0) out.push(fd);
    } catch {
      // closed meanwhile (the directory's own descriptor among them)
    }
  }
  return out.sort((a, b) => a - b);
}

const BASH = ['/bin/bash', '/usr/bin/bash'].find((p) => existsSync(p));

/**
 * `bwrap args` started through the launcher shell: the inheritable descriptors closed (but `keep`), the seccomp program at
 * `seccomp` open on {@link SECCOMP_FD}, `pidMax` (root) readable on {@link PID_MAX_FD}. Throws when a descriptor above
 * 9 must be closed and there is no bash (`sh` names only 0-9), saying what to do.
 */
export function launcher(
  bwrap: string,
  args: string[],
  seccomp: string | undefined,
  keep: readonly number[] = [],
  pidMax?: string,
): WrappedCommand {
  // a descriptor the caller maps into the child (spawn's stdio) is that, not the worker's own of the same number
  const reopened = [...(seccomp ? [SECCOMP_FD] : []), ...(pidMax !== undefined ? [PID_MAX_FD] : [])];
  const fds = inheritableFds().filter((fd) => !keep.includes(fd) && !reopened.includes(fd));
  const wide = fds.some((fd) => fd > 9);
  if (wide && !BASH)
    throw new Error(
      `The worker holds file descriptors ${fds.join(', ')} without close-on-exec, and without bash the sandbox cannot ` +
        'close those above 9 before it starts: start the worker without them (close them in the script that starts ' +
        'it) or install bash.',
    );
  let script = fds.map((fd) => `exec ${fd}>&-`).join('; ');
  if (seccomp) script += `${script ? '; ' : ''}exec ${SECCOMP_FD}<"$1" || exit 125`;
  if (pidMax !== undefined)
    script += `${script ? '; ' : ''}exec ${PID_MAX_FD}<<'KEEL_PID_MAX'\n${pidMax}KEEL_PID_MAX\n`;
  // bwrap (and so the sandbox's init, whose /proc/1/environ the command reads) gets PATH only: not the shell's own PWD
  // (the worker's directory) nor SHLVL (which bash's exec exports again: env removes it)
  script += `${script && !script.endsWith('\n') ? '; ' : ''}unset PWD OLDPWD _; shift; exec ${wide ? 'env -u SHLVL ' : ''}"$@"`;
  return {
    file: wide ? BASH! : '/bin/sh',
    // --norc: bash started with a socket as stdin would read ~/.bashrc (as under rshd)
    args: [...(wide ? ['--norc', '--noprofile'] : []), '-c', script, 'keel-sandbox', seccomp ?? '', bwrap, ...args],
    env: launchEnv(),
  };
}
