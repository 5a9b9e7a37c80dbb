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
 * - parent directories are created one at a time through the descriptor of the directory before them
 *   ({@link mkdirConfined}), each opened directory found inside before anything is created in it.
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
 * Creates directory `dir` (already confined by path) and its missing parents, never outside the workspace (issue 33
 * item 7: a parallel `bash` that swaps a component for a symlink to a host directory between a check and a `mkdir`).
 *
 * Where `/proc/self/fd` exists (Linux), the components are walked with directory descriptors: the workspace root that
 * contains `dir` is opened, and each component is created (`mkdir`) and then opened through the descriptor of the
 * directory before it (`/proc/self/fd/<fd>/<name>`), never by a path a swap could redirect. A component may be a
 * symlink (followed); each opened directory's real path must be inside the workspace's real roots before anything is
 * created in it, else the walk stops with `workspace.outsideError(given)`. So a directory is only ever created in a
 * directory that was verified inside, and nothing outside is created or removed.
 *
 * Elsewhere (no `/proc`), the components are created by path, one at a time, each checked before and after, and one
 * this call created that landed outside is removed again.
 *
 * Errors of a component that is not a directory (ENOTDIR, EEXIST of a file) are thrown as they are.
 */
export async function mkdirConfined(workspace: Workspace, dir: string, given: string): Promise<void> {
  if (!PROC_FD) return mkdirByPath(workspace, dir, given);
  const root = await workspace.containingRoot(dir);
  if (root === undefined) throw workspace.outsideError(given);
  const names = path
    .relative(root, dir)
    .split(path.sep)
    .filter((n) => n !== '');
  // The root is the operator's (bash runs inside it and cannot swap it); a missing one is created, as before.
  let current = await openDirectory(workspace, root, given).catch(async (error: unknown) => {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
    await mkdir(root, { recursive: true });
    return openDirectory(workspace, root, given);
  });
  try {
    for (const name of names) {
      const child = `/proc/self/fd/${current.fd}/${name}`;
      try {
        await mkdir(child);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      const next = await openDirectory(workspace, child, given);
      await current.close();
      current = next;
    }
  } finally {
    await current.close();
  }
}

/** Opens `p` as a directory (symlinks followed) and returns it only when its real path is inside the workspace. */
async function openDirectory(workspace: Workspace, p: string, given: string): Promise<FileHandle> {
  const handle = await open(p, constants.O_RDONLY | constants.O_DIRECTORY);
  const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  if (real !== undefined && (await workspace.containsReal(real))) return handle;
  await handle.close();
  throw workspace.outsideError(given);
}

/** {@link mkdirConfined} without `/proc/self/fd`: by path, each directory checked before and after it is created. */
async function mkdirByPath(workspace: Workspace, dir: string, given: string): Promise<void> {
  const missing: string[] = [];
  for (let p = dir; !(await isDirectory(p)); p = path.dirname(p)) {
    missing.unshift(p);
    if (path.dirname(p) === p) break;
  }
  for (const d of missing) {
    await workspace.confine(d, given);
    let created = false;
    try {
      await mkdir(d);
      created = true;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    const real = await realpath(d);
    if (!(await workspace.containsReal(real))) {
      if (created) await rmdir(real).catch(() => {});
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
