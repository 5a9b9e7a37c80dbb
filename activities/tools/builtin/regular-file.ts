/**
 * Opening files that may not be regular (issue 33 item 2). A FIFO, a socket or a device opened the usual way can block
 * the opening thread for good — a FIFO waits for its other end, which a sandbox that is gone never opens — and each
 * such open holds one of libuv's four pool threads, after which every `fs` call and `dns.lookup` of the worker waits.
 * So the tools open every file they read or write in the worker with `O_NONBLOCK` (which never blocks an open and
 * changes nothing for a regular file), `fstat` the descriptor, and refuse anything but a regular file with
 * {@link notRegularFileError}.
 */
import { constants } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';

/** The refusal of a path that is not a regular file (a FIFO, socket, device or directory), as the model reads it. */
export function notRegularFileError(given: string): Error {
  return new Error(`Path "${given}" is not a regular file`);
}

/**
 * `open(path, flags | O_NONBLOCK, mode)`, then `fstat`: the handle when it is a regular file; otherwise it is closed
 * and {@link notRegularFileError} thrown. `ENXIO` (a write-only open of a FIFO nobody reads, or a socket) is that same
 * refusal; any other error of the open is thrown as is.
 */
export async function openRegular(path: string, flags: number, given: string, mode?: number): Promise<FileHandle> {
  let handle: FileHandle;
  try {
    handle = await open(path, flags | constants.O_NONBLOCK, mode);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENXIO') throw notRegularFileError(given);
    throw error;
  }
  let regular = false;
  try {
    regular = (await handle.stat()).isFile();
  } finally {
    if (!regular) await handle.close();
  }
  if (!regular) throw notRegularFileError(given);
  return handle;
}

/** The whole content of `path` when it is a regular file (read only after the check); {@link openRegular}'s errors. */
export async function readRegularFile(path: string): Promise<Buffer> {
  const handle = await openRegular(path, constants.O_RDONLY, path);
  try {
    return await handle.readFile();
  } finally {
    await handle.close();
  }
}
