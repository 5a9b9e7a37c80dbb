/** `ls` (Pi reference §C.7): directory entries (dotfiles included), sorted case-insensitively, directories suffixed "/". */
import { readdir, stat } from 'node:fs/promises';
import nodePath from 'node:path';
import { Type, type Static } from 'typebox';
import { defineTool, type ToolDefinition } from '../define-tool.js';
import { throwIfAborted } from './abort.js';
import { pathExists, type Workspace } from './paths.js';
import { openConfinedDir } from './search-common.js';
import { DEFAULT_MAX_BYTES, formatSize, type TruncationResult, truncateHead } from './truncate.js';

/** The arguments of `ls`, from its schema `lsParameters`. */
export type LsArgs = Static<typeof lsParameters>;

export interface LsToolDetails {
  truncation?: TruncationResult;
  entryLimitReached?: number;
}

export interface LsToolOptions {
  workspace: Workspace;
}

const DEFAULT_LIMIT = 500;

export const lsParameters = Type.Object({
  path: Type.Optional(Type.String({ description: 'Directory to list (default: current directory)' })),
  limit: Type.Optional(Type.Number({ description: `Maximum number of entries to return (default: ${DEFAULT_LIMIT})` })),
});

export function createLsTool(options: LsToolOptions): ToolDefinition<LsArgs, LsToolDetails | undefined> {
  const { workspace } = options;
  return defineTool<typeof lsParameters, LsToolDetails | undefined>({
    name: 'ls',
    label: 'ls',
    description: `List directory contents. Returns entries sorted alphabetically, with '/' suffix for directories. Includes dotfiles. Output is truncated to ${DEFAULT_LIMIT} entries or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first).`,
    parameters: lsParameters,
    idempotent: true,
    workerLocal: true,
    summary: (args) => `ls ${String(args?.path || '.')}`,
    async execute(_toolCallId, { path, limit }, signal) {
      throwIfAborted(signal);
      const dirPath = await workspace.resolve(path || '.');
      const effectiveLimit = Math.max(1, Math.floor(limit ?? DEFAULT_LIMIT));
      if (!(await pathExists(dirPath))) throw new Error(`Path not found: ${dirPath}`);
      if (!(await stat(dirPath)).isDirectory()) throw new Error(`Not a directory: ${dirPath}`);
      // read through a descriptor whose real path is checked again: a directory swapped for a symlink out of the
      // workspace since it was confined (a parallel bash) is not listed
      const handle = await openConfinedDir(dirPath, (real) => workspace.containsReal(real));
      if (!handle) throw new Error(`Cannot read directory: ${dirPath} changed while it was opened`);
      const via = `/proc/self/fd/${handle.fd}`;
      let entries: string[];
      try {
        entries = await readdir(via);
      } catch (error) {
        await handle.close();
        throw new Error(`Cannot read directory: ${(error as Error).message}`);
      }
      throwIfAborted(signal);
      entries.sort((a, b) => a.toLowerCase().localeCompare(b.toLowerCase()));

      const results: string[] = [];
      let entryLimitReached = false;
      for (const entry of entries) {
        if (results.length >= effectiveLimit) {
          entryLimitReached = true;
          break;
        }
        try {
          const isDir = (await stat(nodePath.join(via, entry))).isDirectory();
          results.push(isDir ? `${entry}/` : entry);
        } catch {
          // entries that cannot be stat'ed (dangling links…) are skipped
        }
      }
      await handle.close();
      if (results.length === 0) return { content: [{ type: 'text', text: '(empty directory)' }], details: undefined };

      const truncation = truncateHead(results.join('\n'), { maxLines: Number.MAX_SAFE_INTEGER });
      let text = truncation.content;
      const details: LsToolDetails = {};
      const notices: string[] = [];
      if (entryLimitReached) {
        notices.push(`${effectiveLimit} entries limit reached. Use limit=${effectiveLimit * 2} for more`);
        details.entryLimitReached = effectiveLimit;
      }
      if (truncation.truncated) {
        notices.push(`${formatSize(DEFAULT_MAX_BYTES)} limit reached`);
        details.truncation = truncation;
      }
      if (notices.length > 0) text += `\n\n[${notices.join('. ')}]`;
      return { content: [{ type: 'text', text }], details: Object.keys(details).length > 0 ? details : undefined };
    },
  });
}
