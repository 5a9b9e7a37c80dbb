/**
 * `grep` (Pi reference §C.5): ripgrep when available (`--json`), else a pure-Node search with the same output, .gitignore
 * handling (only inside a git work tree, like rg) and hidden files included; its lines are matched in a worker thread
 * with a time budget per line (line-matcher.ts), so no pattern can block the worker.
 */
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import nodePath from 'node:path';
import { createInterface } from 'node:readline';
import ignore from 'ignore';
import { Type, type Static } from 'typebox';
import { defineTool, type ToolDefinition } from '../define-tool.js';
import { abortedError, throwIfAborted } from './abort.js';
import type { Workspace } from './paths.js';
import { notRegularFileError, readRegularFile } from './regular-file.js';
import { escapeRegExp, type ExternalSearch, findExecutable, walk } from './search-common.js';
import {
  DEFAULT_MAX_BYTES,
  formatSize,
  GREP_MAX_LINE_LENGTH,
  type TruncationResult,
  truncateHead,
  truncateLine,
} from './truncate.js';
import type { ProcessWrapper } from './sandbox.js';
import { toolEnvironment } from './tool-env.js';
import { LineMatcher } from './line-matcher.js';

/** The arguments of `grep`, from its schema `grepParameters`. */
export type GrepArgs = Static<typeof grepParameters>;

export interface GrepToolDetails {
  truncation?: TruncationResult;
  matchLimitReached?: number;
  linesTruncated?: boolean;
}

export interface GrepToolOptions {
  workspace: Workspace;
  useExternalSearch?: ExternalSearch;
  /** Runs rg through this (the sandbox, `sandbox.ts`). */
  wrap?: ProcessWrapper;
}

const DEFAULT_LIMIT = 100;

export const grepParameters = Type.Object({
  pattern: Type.String({ description: 'Search pattern (regex or literal string)' }),
  path: Type.Optional(Type.String({ description: 'Directory or file to search (default: current directory)' })),
  glob: Type.Optional(Type.String({ description: "Filter files by glob pattern, e.g. '*.ts' or '**/*.spec.ts'" })),
  ignoreCase: Type.Optional(Type.Boolean({ description: 'Case-insensitive search (default: false)' })),
  literal: Type.Optional(
    Type.Boolean({ description: 'Treat pattern as literal string instead of regex (default: false)' }),
  ),
  context: Type.Optional(
    Type.Number({ description: 'Number of lines to show before and after each match (default: 0)' }),
  ),
  limit: Type.Optional(Type.Number({ description: `Maximum number of matches to return (default: ${DEFAULT_LIMIT})` })),
});

interface MatchRef {
  filePath: string;
  lineNumber: number;
}

interface SearchRequest {
  pattern: string;
  searchPath: string;
  isDirectory: boolean;
  glob?: string;
  ignoreCase: boolean;
  literal: boolean;
  limit: number;
  signal?: AbortSignal;
  top: string;
}

interface SearchResult {
  matches: MatchRef[];
  matchLimitReached: boolean;
}

async function searchWithRipgrep(rgPath: string, req: SearchRequest, wrap?: ProcessWrapper): Promise<SearchResult> {
  const args = ['--json', '--line-number', '--color=never', '--hidden'];
  if (req.ignoreCase) args.push('--ignore-case');
  if (req.literal) args.push('--fixed-strings');
  if (req.glob) args.push('--glob', req.glob);
  args.push('--', req.pattern, req.searchPath);

  return new Promise<SearchResult>((resolve, reject) => {
    const cmd = wrap ? wrap(rgPath, args, toolEnvironment()) : { file: rgPath, args, env: toolEnvironment() };
    const child = spawn(cmd.file, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'], env: cmd.env });
    const rl = createInterface({ input: child.stdout });
    const matches: MatchRef[] = [];
    let stderr = '';
    let matchLimitReached = false;
    let killedForLimit = false;
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      child.kill('SIGKILL');
    };
    req.signal?.addEventListener('abort', onAbort, { once: true });
    child.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString('utf-8');
    });
    rl.on('line', (line) => {
      if (matchLimitReached || !line.trim()) return;
      let event: { type?: string; data?: { path?: { text?: string; bytes?: string }; line_number?: number } };
      try {
        event = JSON.parse(line);
      } catch {
        return;
      }
      if (event.type !== 'match') return;
      const p = event.data?.path;
      const filePath = p?.text ?? (p?.bytes ? Buffer.from(p.bytes, 'base64').toString('utf-8') : undefined);
      const lineNumber = event.data?.line_number;
      if (filePath && typeof lineNumber === 'number') matches.push({ filePath, lineNumber });
      if (matches.length >= req.limit) {
        matchLimitReached = true;
        killedForLimit = true;
        child.kill();
      }
    });
    child.on('error', (error) => {
      req.signal?.removeEventListener('abort', onAbort);
      reject(new Error(`Failed to run ripgrep: ${error.message}`));
    });
    child.on('close', (code) => {
      void cmd.cgroup?.release();
      rl.close();
      req.signal?.removeEventListener('abort', onAbort);
      if (aborted) return reject(abortedError());
      if (!killedForLimit && code !== 0 && code !== 1)
        return reject(new Error(stderr.trim() || `ripgrep exited with code ${code}`));
      resolve({ matches, matchLimitReached });
    });
  });
}

/** Translates a leading `(?flags)` group (Rust syntax) into JavaScript flags. */
function compileRegex(pattern: string, literal: boolean, ignoreCase: boolean): RegExp {
  let source = literal ? escapeRegExp(pattern) : pattern;
  let flags = ignoreCase ? 'i' : '';
  if (!literal) {
    const inline = /^\(\?([imsxU]+)\)/.exec(source);
    if (inline && !inline[1].includes('x') && !inline[1].includes('U')) {
      for (const f of inline[1]) if (!flags.includes(f)) flags += f;
      source = source.slice(inline[0].length);
    }
  }
  try {
    return new RegExp(source, `${flags}u`);
  } catch {
    try {
      return new RegExp(source, flags);
    } catch (error) {
      throw new Error(`regex parse error:\n    ${pattern}\nerror: ${(error as Error).message}`);
    }
  }
}

/** rg's override globs: whitelist globs keep only matching files, `!glob` excludes files and directories. */
function globFilter(glob: string | undefined): ((relativePath: string, isDirectory: boolean) => boolean) | undefined {
  if (!glob) return undefined;
  const negated = glob.startsWith('!');
  const ig = ignore({ ignorecase: false }).add(negated ? glob.slice(1) : glob);
  return (relativePath, isDirectory) => {
    const hit = ig.ignores(isDirectory ? `${relativePath}/` : relativePath);
    if (negated) return !hit;
    return isDirectory ? true : hit;
  };
}

/** Pi's search without rg; lines are matched in a worker thread with a time budget (line-matcher.ts). */
async function searchWithNode(req: SearchRequest): Promise<SearchResult> {
  const regex = compileRegex(req.pattern, req.literal, req.ignoreCase);
  const matcher = new LineMatcher(regex, req.pattern, req.signal);
  try {
    return await searchFiles(req, matcher);
  } finally {
    await matcher.close();
  }
}

async function searchFiles(req: SearchRequest, matcher: LineMatcher): Promise<SearchResult> {
  const filter = globFilter(req.glob);
  const matches: MatchRef[] = [];
  let matchLimitReached = false;
  const searchFile = async (filePath: string): Promise<boolean> => {
    let buf: Buffer;
    try {
      buf = await readRegularFile(filePath); // a FIFO or device is skipped, never waited on
    } catch {
      return false;
    }
    if (buf.includes(0)) return false; // binary, like rg's default
    const shown = nodePath.relative(req.top, filePath) || nodePath.basename(filePath);
    for (const lineNumber of await matcher.match(buf.toString('utf-8'), shown)) {
      matches.push({ filePath, lineNumber });
      if (matches.length >= req.limit) {
        matchLimitReached = true;
        return true;
      }
    }
    return false;
  };
  if (!req.isDirectory) {
    await searchFile(req.searchPath);
    return { matches, matchLimitReached };
  }
  const files: string[] = [];
  await walk(
    req.searchPath,
    {
      ignoreFiles: ['.ignore', '.rgignore'],
      gitignore: 'in-repo',
      skipGitDir: false,
      top: req.top,
      signal: req.signal,
    },
    (entry) => {
      if (filter && !filter(entry.relativePath, entry.isDirectory)) return;
      if (!entry.isDirectory && !entry.isSymbolicLink) files.push(entry.absolutePath);
    },
  );
  for (const file of files) {
    throwIfAborted(req.signal);
    if (await searchFile(file)) break;
  }
  return { matches, matchLimitReached };
}

/**
 * The output lines of `matches`: `path:line: text` for a match, `path-line- text` for its context lines, paths relative
 * to `searchPath` when it is a directory; and whether a long line was cut.
 */
async function matchLines(
  matches: readonly { filePath: string; lineNumber: number }[],
  searchPath: string,
  isDirectory: boolean,
  contextValue: number,
): Promise<{ output: string[]; linesTruncated: boolean }> {
  const formatPath = (filePath: string): string => {
    if (isDirectory) {
      const relative = nodePath.relative(searchPath, filePath);
      if (relative && !relative.startsWith('..')) return relative.split(nodePath.sep).join('/');
    }
    return nodePath.basename(filePath);
  };
  const cache = new Map<string, string[]>();
  const fileLines = async (filePath: string): Promise<string[]> => {
    let lines = cache.get(filePath);
    if (!lines) {
      try {
        const text = (await readRegularFile(filePath)).toString('utf-8');
        lines = text.replace(/\r\n/g, '\n').replace(/\r/g, '\n').split('\n');
      } catch {
        lines = [];
      }
      cache.set(filePath, lines);
    }
    return lines;
  };

  let linesTruncated = false;
  const output: string[] = [];
  for (const { filePath, lineNumber } of matches) {
    const shown = formatPath(filePath);
    const lines = await fileLines(filePath);
    if (!lines.length) {
      output.push(`${shown}:${lineNumber}: (unable to read file)`);
      continue;
    }
    const start = contextValue > 0 ? Math.max(1, lineNumber - contextValue) : lineNumber;
    const end = contextValue > 0 ? Math.min(lines.length, lineNumber + contextValue) : lineNumber;
    for (let current = start; current <= end; current++) {
      const { text, wasTruncated } = truncateLine((lines[current - 1] ?? '').replace(/\r/g, ''));
      if (wasTruncated) linesTruncated = true;
      output.push(current === lineNumber ? `${shown}:${current}: ${text}` : `${shown}-${current}- ${text}`);
    }
  }
  return { output, linesTruncated };
}

export function createGrepTool(options: GrepToolOptions): ToolDefinition<GrepArgs, GrepToolDetails | undefined> {
  const { workspace } = options;
  return defineTool<typeof grepParameters, GrepToolDetails | undefined>({
    name: 'grep',
    label: 'grep',
    description: `Search file contents for a pattern. Returns matching lines with file paths and line numbers. Respects .gitignore. Output is truncated to ${DEFAULT_LIMIT} matches or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first). Long lines are truncated to ${GREP_MAX_LINE_LENGTH} chars.`,
    parameters: grepParameters,
    idempotent: true,
    workerLocal: true,
    summary: (args) => `grep ${String(args?.pattern ?? '')} in ${String(args?.path || '.')}`,
    async execute(_toolCallId, { pattern, path, glob, ignoreCase, literal, context, limit }, signal) {
      throwIfAborted(signal);
      const rgPath = options.useExternalSearch === false ? undefined : findExecutable(['rg']);
      if (options.useExternalSearch === true && !rgPath)
        throw new Error('ripgrep (rg) is not available and could not be downloaded');

      const searchPath = await workspace.resolve(path || '.');
      let isDirectory: boolean;
      let isFile: boolean;
      try {
        const found = await stat(searchPath);
        [isDirectory, isFile] = [found.isDirectory(), found.isFile()];
      } catch {
        throw new Error(`Path not found: ${searchPath}`);
      }
      // A FIFO or device is never searched: reading it could wait for good.
      if (!isDirectory && !isFile) throw notRegularFileError(path || '.');
      const contextValue = context && context > 0 ? Math.floor(context) : 0;
      const effectiveLimit = Math.max(1, Math.floor(limit ?? DEFAULT_LIMIT));
      const request: SearchRequest = {
        pattern,
        searchPath,
        isDirectory,
        glob,
        ignoreCase: Boolean(ignoreCase),
        literal: Boolean(literal),
        limit: effectiveLimit,
        signal,
        top: (await workspace.containingRoot(searchPath)) ?? searchPath,
      };
      const { matches, matchLimitReached } = rgPath
        ? await searchWithRipgrep(rgPath, request, options.wrap)
        : await searchWithNode(request);
      throwIfAborted(signal);
      if (matches.length === 0) return { content: [{ type: 'text', text: 'No matches found' }], details: undefined };

      const { output, linesTruncated } = await matchLines(matches, searchPath, isDirectory, contextValue);
      const truncation = truncateHead(output.join('\n'), { maxLines: Number.MAX_SAFE_INTEGER });
      let text = truncation.content;
      const details: GrepToolDetails = {};
      const notices: string[] = [];
      if (matchLimitReached) {
        notices.push(
          `${effectiveLimit} matches limit reached. Use limit=${effectiveLimit * 2} for more, or refine pattern`,
        );
        details.matchLimitReached = effectiveLimit;
      }
      if (truncation.truncated) {
        notices.push(`${formatSize(DEFAULT_MAX_BYTES)} limit reached`);
        details.truncation = truncation;
      }
      if (linesTruncated) {
        notices.push(`Some lines truncated to ${GREP_MAX_LINE_LENGTH} chars. Use read tool to see full lines`);
        details.linesTruncated = true;
      }
      if (notices.length > 0) text += `\n\n[${notices.join('. ')}]`;
      return { content: [{ type: 'text', text }], details: Object.keys(details).length > 0 ? details : undefined };
    },
  });
}
