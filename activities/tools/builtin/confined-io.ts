/**
 * File I/O that checks the file actually opened, not the path before opening (issue 10 item 5). A name that flips
 * between a regular file and a symlink to outside the workspace after {@link Workspace.confine} looked at it cannot
 * redirect a read or a write:
 *
 * - the final component is opened with `O_NOFOLLOW`; when it is a symlink (ELOOP), its target is confined and opened
 *   the same way (a symlink that stays inside still works);
 * - before a byte is read or written, the descriptor's real path (`/proc/self/fd/<fd>`, else the path's real path with
 *   the same device and inode) must be inside the workspace's real roots; otherwise the descriptor is closed and the
 *   model gets the usual outside-the-workspace error;
 * - a write opens without `O_TRUNC` and truncates through the verified descriptor, so an outside file is never
 *   truncated; a file this open created outside (a parent directory swapped for a symlink) is removed again;
 * - a regular file with more than one name (a hard link, `st_nlink > 1`) is refused on read and write with
 *   {@link hardLinkError}: its other name may be outside the workspace, and no path check can tell;
 * - every open is `O_NONBLOCK` and anything but a regular file (a FIFO, socket, device) is refused with
 *   `Path "<given>" is not a regular file` (`regular-file.ts`): an open never waits for a FIFO's other end;
 * - parent directories are created one at a time ({@link mkdirConfined}), each after its parent was found inside.
 */
import { constants, readlinkSync } from 'node:fs';
import { mkdir, open, readlink, realpath, rmdir, stat, unlink, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Workspace } from './paths.js';
import { notRegularFileError } from './regular-file.js';

const MAX_LINKS = 40;
const PROC_FD = (() => {
  try {
    readlinkSync('/proc/self/fd/0');
    return true;
  } catch {
    return false;
  }
})();

/** The real path of the file behind `handle` (opened as `opened`). */
async function realPathOf(handle: FileHandle, opened: string): Promise<string | undefined> {
  if (PROC_FD) return readlink(`/proc/self/fd/${handle.fd}`);
  try {
    const [byFd, real] = await Promise.all([handle.stat(), realpath(opened)]);
    const byPath = await stat(real);
    return byFd.dev === byPath.dev && byFd.ino === byPath.ino ? real : undefined;
  } catch {
    return undefined;
  }
}

export interface ConfinedOpenOptions {
  /** `read`: O_RDONLY. `write`: O_WRONLY | O_CREAT, not truncated (use {@link writeConfined}). */
  mode: 'read' | 'write';
  /** A real path that may be opened although it is outside the workspace (the bash tool's full-output log). */
  alsoAllowed?: string;
}

/**
 * Opens `absolute` (already confined by path) and returns the handle only when the file opened is inside the
 * workspace. Throws `workspace.outsideError(given)` otherwise, and the open's own error (ENOENT, EISDIR, …) as is.
 */
export async function openConfined(
  workspace: Workspace,
  absolute: string,
  given: string,
  options: ConfinedOpenOptions,
): Promise<FileHandle> {
  const base =
    (options.mode === 'read' ? constants.O_RDONLY : constants.O_WRONLY | constants.O_CREAT) | constants.O_NONBLOCK;
  let target = absolute;
  for (let links = 0; ; links++) {
    let handle: FileHandle;
    let created = false;
    try {
      if (options.mode === 'write') {
        try {
          handle = await open(target, base | constants.O_EXCL | constants.O_NOFOLLOW, 0o666);
          created = true;
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
          handle = await open(target, base | constants.O_NOFOLLOW);
        }
      } else {
        handle = await open(target, base | constants.O_NOFOLLOW);
      }
    } catch (error) {
      // ENXIO: a write-only open of a FIFO that nobody reads (or of a socket).
      if ((error as NodeJS.ErrnoException).code === 'ENXIO') throw notRegularFileError(given);
      // The final component is a symlink: follow it one step, confining the target by path first.
      if ((error as NodeJS.ErrnoException).code !== 'ELOOP' || links >= MAX_LINKS) throw error;
      const next = path.resolve(path.dirname(target), await readlink(target));
      if (next !== options.alsoAllowed) await workspace.confine(next, given);
      target = next;
      continue;
    }
    const real = await realPathOf(handle, target);
    if (real !== undefined && (real === options.alsoAllowed || (await workspace.containsReal(real)))) {
      const stats = await handle.stat().catch(async (error: unknown) => {
        await handle.close();
        throw error;
      });
      if (stats.isFile() && stats.nlink <= 1) return handle;
      await handle.close();
      throw stats.isFile() ? hardLinkError(workspace, given, stats.nlink) : notRegularFileError(given);
    }
    await handle.close();
    if (created && real !== undefined) await unlink(real).catch(() => {});
    throw workspace.outsideError(given);
  }
}

/** The refusal of a file with several names (hard links): the model reads it and can work on a copy instead. */
export function hardLinkError(workspace: Workspace, given: string, nlink: number): Error {
  return new Error(
    `Path "${given}" is a hard link (the file has ${nlink} names, and another may be outside the workspace ${workspace.root}); it is not read or written. Use a file with a single name inside ${workspace.root}.`,
  );
}

/**
 * Creates directory `dir` (already confined by path) and its missing parents, one at a time: each only after the real
 * path of what it is created in was found inside the workspace, and each checked again once created (a directory
 * that landed outside, its parent swapped for a symlink meanwhile, is removed again). Throws
 * `workspace.outsideError(given)` before creating anything outside.
 */
export async function mkdirConfined(workspace: Workspace, dir: string, given: string): Promise<void> {
  const missing: string[] = [];
  for (let p = dir; !(await isDirectory(p)); p = path.dirname(p)) {
    missing.unshift(p);
    if (path.dirname(p) === p) break;
  }
  for (const d of missing) {
    await workspace.confine(d, given);
    try {
      await mkdir(d);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const real = await realpath(d);
    if (!(await workspace.containsReal(real))) {
      await rmdir(real).catch(() => {});
      throw workspace.outsideError(given);
    }
  }
}

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await stat(p)).isDirectory();
  } catch {
    return false;
  }
}

/** Reads the whole file behind a confined open. */
export async function readConfined(
  workspace: Workspace,
  absolute: string,
  given: string,
  alsoAllowed?: string,
): Promise<Buffer> {
  const handle = await openConfined(workspace, absolute, given, {
    mode: 'read',
    ...(alsoAllowed ? { alsoAllowed } : {}),
  });
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}

/** Replaces the file's content (creating it) through a confined open: truncated only after the check. */
export async function writeConfined(
  workspace: Workspace,
  absolute: string,
  given: string,
  content: string,
): Promise<void> {
  const handle = await openConfined(workspace, absolute, given, { mode: 'write' });
  try {
    await handle.truncate(0);
    await handle.writeFile(content, 'utf-8');
  } finally {
    await handle.close();
  }
}
