/**
 * `write` (Pi reference §C.4): creates parent directories (through directory descriptors, never outside the workspace:
 * `confined-io.ts`), overwrites, UTF-8. With a `size`, refused while the workspace is over its size limit, and its own
 * change is added to the figure (`workspace-size.ts`).
 */
import nodePath from 'node:path';
import { Type, type Static } from 'typebox';
import { defineTool, type ToolDefinition } from '../define-tool.js';
import { throwIfAborted } from './abort.js';
import { mkdirConfined, writeConfined } from './confined-io.js';
import { withFileMutationQueue } from './file-mutation-queue.js';
import { realResolve, type Workspace } from './paths.js';
import { fileBytes, withNotice, type WorkspaceSize } from './workspace-size.js';

/** The arguments of `write`, from its schema `writeParameters`. */
export type WriteArgs = Static<typeof writeParameters>;

export interface WriteToolOptions {
  workspace: Workspace;
  /** The workspace's size limit (`workspace-size.ts`): refused while over it, its own delta added after writing. */
  size?: WorkspaceSize;
}

export const writeParameters = Type.Object({
  path: Type.String({ description: 'Path to the file to write (relative or absolute)' }),
  content: Type.String({ description: 'Content to write to the file' }),
});

export function createWriteTool(options: WriteToolOptions): ToolDefinition<WriteArgs, undefined> {
  const { workspace, size } = options;
  return defineTool<typeof writeParameters, undefined>({
    name: 'write',
    label: 'write',
    description:
      "Write content to a file. Creates the file if it doesn't exist, overwrites if it does. Automatically creates parent directories.",
    parameters: writeParameters,
    // Writing the same content twice leaves the same file.
    idempotent: true,
    workerLocal: true,
    summary: (args) => `write ${String(args?.path ?? '')}`,
    async execute(_toolCallId, { path, content }, signal) {
      throwIfAborted(signal);
      const absolutePath = await workspace.resolve(path);
      const key = await realResolve(absolutePath).catch(() => absolutePath);
      return withFileMutationQueue(key, async () => {
        throwIfAborted(signal);
        // Checked again before anything is created (the path may have changed while the call waited its turn); each
        // missing parent is created only inside; then the file actually opened is checked before writing through it.
        await workspace.confine(absolutePath, path);
        await size?.refuseWhenOver();
        await mkdirConfined(workspace, nodePath.dirname(absolutePath), path);
        throwIfAborted(signal);
        await workspace.confine(absolutePath, path);
        const before = size ? await fileBytes(absolutePath) : 0;
        await writeConfined(workspace, absolutePath, path, content);
        size?.add(Buffer.byteLength(content, 'utf-8') - before);
        throwIfAborted(signal);
        const result = {
          content: [{ type: 'text' as const, text: `Successfully wrote ${content.length} bytes to ${path}` }],
          details: undefined,
        };
        return withNotice(result, size?.notice());
      });
    },
  });
}
