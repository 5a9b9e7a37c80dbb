/**
 * `find` (Pi reference §C.6): fd (or Debian's `fdfind`) when available, else a pure-Node walk with the same output:
 * glob on the name (or the full path when the pattern has a "/"), hidden files included, .gitignore honoured even
 * outside git repositories, `.git/` left out, directories with a trailing "/".
 */
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import nodePath from 'node:path';
import { Type, type Static } from 'typebox';
import { defineTool, type ToolDefinition } from '../define-tool.js';
import { abortedError, throwIfAborted } from './abort.js';
import type { Workspace } from './paths.js';
import { type ExternalSearch, fdInfo, findExecutable, findGitRoot, globToRegExp, walk } from './search-common.js';
import { DEFAULT_MAX_BYTES, formatSize, type TruncationResult, truncateHead } from './truncate.js';
import type { ProcessWrapper } from './sandbox.js';
import { toolEnvironment } from './tool-env.js';

/** The arguments of `find`, from its schema `findParameters`. */
export type FindArgs = Static<typeof findParameters>;

export interface FindToolDetails {
  truncation?: TruncationResult;
  resultLimitReached?: number;
}

export interface FindToolOptions {
  workspace: Workspace;
  useExternalSearch?: ExternalSearch;
  /** Runs fd through this (the sandbox, `sandbox.ts`). */
  wrap?: ProcessWrapper;
}

const DEFAULT_LIMIT = 1000;

export const findParameters = Type.Object({
  pattern: Type.String({
    description: "Glob pattern to match files, e.g. '*.ts', '**/*.json', or 'src/**/*.spec.ts'",
  }),
  path: Type.Optional(Type.String({ description: 'Directory to search in (default: current directory)' })),
  limit: Type.Optional(Type.Number({ description: `Maximum number of results (default: ${DEFAULT_LIMIT})` })),
});

/** A pattern with "/" is matched against the full path, prefixed with `**\/` unless anchored. */
function effectivePattern(pattern: string): { pattern: string; fullPath: boolean } {
  if (!pattern.includes('/')) return { pattern, fullPath: false };
  const anchored = pattern.startsWith('/') || pattern.startsWith('**/') || pattern === '**';
  return { pattern: anchored ? pattern : `**/${pattern}`, fullPath: true };
}

function runFd(
  fdPath: string,
  args: string[],
  signal?: AbortSignal,
  wrap?: ProcessWrapper,
): Promise<{ stdout: string; stderr: string; code: number | null }> {
  return new Promise((resolve, reject) => {
    const cmd = wrap ? wrap(fdPath, args, toolEnvironment()) : { file: fdPath, args, env: toolEnvironment() };
    const child = spawn(cmd.file, cmd.args, { stdio: ['ignore', 'pipe', 'pipe'], env: cmd.env });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let aborted = false;
    const onAbort = () => {
      aborted = true;
      child.kill('SIGKILL');
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (c: Buffer) => out.push(c));
    child.stderr.on('data', (c: Buffer) => err.push(c));
    child.on('error', (error) => {
      signal?.removeEventListener('abort', onAbort);
      reject(new Error(`Failed to run fd: ${error.message}`));
    });
    child.on('close', (code) => {
      void cmd.cgroup?.release();
      signal?.removeEventListener('abort', onAbort);
      if (aborted) return reject(abortedError());
      resolve({ stdout: Buffer.concat(out).toString('utf-8'), stderr: Buffer.concat(err).toString('utf-8'), code });
    });
  });
}

async function findWithFd(
  fdPath: string,
  pattern: string,
  searchPath: string,
  limit: number,
  signal: AbortSignal | undefined,
  wrap?: ProcessWrapper,
): Promise<string[] | undefined> {
  const info = fdInfo(fdPath);
  const args = ['--glob', '--color=never', '--hidden'];
  if (info.supportsNoRequireGit) args.push('--no-require-git');
  // fd < 8.7 honours .gitignore only inside a git work tree: outside one, only the Node walk gets .gitignore right.
  else if (!(await findGitRoot(searchPath))) return undefined;
  if (!info.excludesGitDir) args.push('--exclude', '.git');
  args.push('--max-results', String(limit));
  const eff = effectivePattern(pattern);
  if (eff.fullPath) args.push('--full-path');
  args.push('--', eff.pattern, searchPath);

  const result = await runFd(fdPath, args, signal, wrap);
  const output = result.stdout.trim();
  if (result.code !== 0 && !output) throw new Error(result.stderr.trim() || `fd exited with code ${result.code}`);
  if (!output) return [];
  const relativized: string[] = [];
  for (const raw of output.split('\n')) {
    const line = raw.replace(/\r$/, '').trim();
    if (!line) continue;
    const hadTrailingSlash = line.endsWith('/') || line.endsWith('\\');
    let rel = line.startsWith(searchPath + nodePath.sep)
      ? line.slice(searchPath.length + 1)
      : nodePath.relative(searchPath, line);
    if (hadTrailingSlash && !rel.endsWith('/')) rel += '/';
    relativized.push(rel.split(nodePath.sep).join('/'));
  }
  return relativized;
}

async function findWithNode(
  pattern: string,
  searchPath: string,
  limit: number,
  top: string,
  signal?: AbortSignal,
  confine?: (real: string) => Promise<boolean>,
): Promise<string[]> {
  let isDirectory = false;
  try {
    isDirectory = (await stat(searchPath)).isDirectory();
  } catch {
    // reported below like fd
  }
  if (!isDirectory)
    throw new Error(
      `[fd error]: Search path '${searchPath}' is not a directory.\n[fd error]: No valid search paths given.`,
    );
  const eff = effectivePattern(pattern);
  let regex: RegExp;
  try {
    regex = globToRegExp(eff.pattern);
  } catch (error) {
    throw new Error(`[fd error]: ${(error as Error).message}`);
  }
  const results: string[] = [];
  await walk(
    searchPath,
    { ignoreFiles: ['.ignore', '.fdignore'], gitignore: 'always', skipGitDir: true, top, signal, confine },
    (entry) => {
      const subject = eff.fullPath ? entry.absolutePath : nodePath.basename(entry.absolutePath);
      if (!regex.test(subject)) return false;
      results.push(entry.isDirectory ? `${entry.relativePath}/` : entry.relativePath);
      return results.length >= limit;
    },
  );
  return results;
}

export function createFindTool(options: FindToolOptions): ToolDefinition<FindArgs, FindToolDetails | undefined> {
  const { workspace } = options;
  return defineTool<typeof findParameters, FindToolDetails | undefined>({
    name: 'find',
    label: 'find',
    description: `Search for files by glob pattern. Returns matching file paths relative to the search directory. Respects .gitignore. Output is truncated to ${DEFAULT_LIMIT} results or ${DEFAULT_MAX_BYTES / 1024}KB (whichever is hit first).`,
    parameters: findParameters,
    idempotent: true,
    workerLocal: true,
    summary: (args) => `find ${String(args?.pattern ?? '')}`,
    async execute(_toolCallId, { pattern, path, limit }, signal) {
      throwIfAborted(signal);
      const fdPath = options.useExternalSearch === false ? undefined : findExecutable(['fd', 'fdfind']);
      if (options.useExternalSearch === true && !fdPath)
        throw new Error('fd is not available and could not be downloaded');
      const searchPath = await workspace.resolve(path || '.');
      const effectiveLimit = Math.max(1, Math.floor(limit ?? DEFAULT_LIMIT));
      const top = (await workspace.containingRoot(searchPath)) ?? searchPath;

      let results = fdPath
        ? await findWithFd(fdPath, pattern, searchPath, effectiveLimit, signal, options.wrap)
        : undefined;
      results ??= await findWithNode(pattern, searchPath, effectiveLimit, top, signal, (real) =>
        workspace.containsReal(real),
      );
      throwIfAborted(signal);
      if (results.length === 0)
        return { content: [{ type: 'text', text: 'No files found matching pattern' }], details: undefined };

      const truncation = truncateHead(results.join('\n'), { maxLines: Number.MAX_SAFE_INTEGER });
      let text = truncation.content;
      const details: FindToolDetails = {};
      const notices: string[] = [];
      if (results.length >= effectiveLimit) {
        notices.push(
          `${effectiveLimit} results limit reached. Use limit=${effectiveLimit * 2} for more, or refine pattern`,
        );
        details.resultLimitReached = effectiveLimit;
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
