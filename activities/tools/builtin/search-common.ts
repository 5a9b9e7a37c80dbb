/**
 * Shared machinery for `grep` and `find`: locating rg / fd on PATH, and the pure-Node fallback (directory walk with
 * .gitignore / .ignore handling through the `ignore` package, and a globset-compatible glob compiler).
 */
import { spawnSync } from 'node:child_process';
import { accessSync, constants as fsConstants, existsSync, type Dirent } from 'node:fs';
import { lstat, open, readdir, readFile, readlink, type FileHandle } from 'node:fs/promises';
import nodePath from 'node:path';
import ignore from 'ignore';
import { readRegularFile } from './regular-file.js';
import { toolEnvironment } from './tool-env.js';

type Ignore = ignore.Ignore;

/** How `grep`/`find` search: `true` requires rg/fd, `false` forces the Node fallback, undefined uses them when present. */
export type ExternalSearch = boolean | undefined;

const executableCache = new Map<string, string | null>();

/** The first of `names` found as an executable on PATH. */
export function findExecutable(names: string[]): string | undefined {
  for (const name of names) {
    const cached = executableCache.get(name);
    if (cached !== undefined) {
      if (cached) return cached;
      continue;
    }
    let found: string | null = null;
    for (const dir of (process.env.PATH ?? '').split(nodePath.delimiter)) {
      if (!dir) continue;
      const candidate = nodePath.join(dir, name);
      try {
        accessSync(candidate, fsConstants.X_OK);
        found = candidate;
        break;
      } catch {
        // keep looking
      }
    }
    executableCache.set(name, found);
    if (found) return found;
  }
  return undefined;
}

export interface FdInfo {
  path: string;
  /** fd ≥ 8.7 has `--no-require-git`. */
  supportsNoRequireGit: boolean;
  /** fd ≥ 9 leaves out `.git/` with `--hidden`; older versions need `--exclude .git` to match. */
  excludesGitDir: boolean;
}

const fdInfoCache = new Map<string, FdInfo>();

export function fdInfo(fdPath: string): FdInfo {
  let info = fdInfoCache.get(fdPath);
  if (!info) {
    const help = spawnSync(fdPath, ['--help'], { encoding: 'utf-8', env: toolEnvironment() });
    const version = spawnSync(fdPath, ['--version'], { encoding: 'utf-8', env: toolEnvironment() });
    const major = Number(/(\d+)\.\d+/.exec(version.stdout ?? '')?.[1] ?? '0');
    info = {
      path: fdPath,
      supportsNoRequireGit: (help.stdout ?? '').includes('--no-require-git'),
      excludesGitDir: major >= 9,
    };
    fdInfoCache.set(fdPath, info);
  }
  return info;
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch {
    return false;
  }
}

/** The nearest directory at or above `dir` that has a `.git` entry. */
export async function findGitRoot(dir: string): Promise<string | undefined> {
  for (let d = dir; ; d = nodePath.dirname(d)) {
    if (await exists(nodePath.join(d, '.git'))) return d;
    if (nodePath.dirname(d) === d) return undefined;
  }
}

function toPosix(p: string): string {
  return p.split(nodePath.sep).join('/');
}

interface IgnoreLayer {
  base: string;
  ig: Ignore;
}

export interface WalkOptions {
  /** Ignore files read in every directory, lowest precedence first (e.g. `.ignore`, `.rgignore`). */
  ignoreFiles: string[];
  /** `always` (fd --no-require-git), `in-repo` (rg: only inside a git work tree) or `never`. */
  gitignore: 'always' | 'in-repo' | 'never';
  /** Leave out `.git` entries (fd ≥ 9). */
  skipGitDir: boolean;
  /** Ignore files of the directories from `top` down to the search directory apply too. */
  top: string;
  signal?: AbortSignal;
  /**
   * Whether the real path of the opened search directory is allowed (the workspace's `containsReal`): a directory
   * swapped for a symlink after the caller confined it yields nothing. Subdirectories are opened without following
   * symlinks, relative to their parent's descriptor.
   */
  confine?: (real: string) => Promise<boolean>;
}

export interface WalkEntry {
  absolutePath: string;
  /** Relative to the search directory, forward slashes. */
  relativePath: string;
  isDirectory: boolean;
  isSymbolicLink: boolean;
}

async function loadLayer(dir: string, names: string[], readFrom = dir): Promise<IgnoreLayer | undefined> {
  let ig: Ignore | undefined;
  for (const name of names) {
    let text: string;
    try {
      text = (await readRegularFile(nodePath.join(readFrom, name))).toString('utf-8'); // never waits on a FIFO
    } catch {
      continue;
    }
    ig ??= ignore({ allowRelativePaths: true, ignorecase: false });
    ig.add(text);
  }
  return ig ? { base: dir, ig } : undefined;
}

function isIgnored(layers: IgnoreLayer[], absolutePath: string, isDirectory: boolean): boolean {
  for (let i = layers.length - 1; i >= 0; i--) {
    const rel = toPosix(nodePath.relative(layers[i].base, absolutePath));
    if (!rel || rel.startsWith('..')) continue;
    const result = layers[i].ig.test(isDirectory ? `${rel}/` : rel);
    if (result.ignored) return true;
    if (result.unignored) return false;
  }
  return false;
}

/**
 * Depth-first walk of `root` in name order, hidden entries included, symlinks reported but never followed, ignored
 * entries (and everything under ignored directories) left out. `visit` returns true to stop the walk.
 */
export async function walk(
  root: string,
  options: WalkOptions,
  visit: (entry: WalkEntry) => boolean | void,
): Promise<void> {
  const gitRoot = options.gitignore === 'in-repo' ? await findGitRoot(root) : undefined;
  const namesFor = (dir: string): string[] => {
    const useGitignore = options.gitignore === 'always' || (gitRoot !== undefined && isAtOrBelow(dir, gitRoot));
    return useGitignore ? ['.gitignore', ...options.ignoreFiles] : options.ignoreFiles;
  };
  const layers: IgnoreLayer[] = [];
  // Ancestors between the top (workspace root) and the search directory.
  if (isAtOrBelow(root, options.top) && root !== options.top) {
    const chain: string[] = [];
    for (let d = nodePath.dirname(root); ; d = nodePath.dirname(d)) {
      chain.unshift(d);
      if (d === options.top || nodePath.dirname(d) === d) break;
    }
    for (const d of chain) {
      const layer = await loadLayer(d, namesFor(d));
      if (layer) layers.push(layer);
    }
  }

  let stopped = false;
  // each directory is read through a descriptor opened without following a symlink, relative to its parent's
  // (/proc/self/fd/<parent>/<name>): a directory swapped for a symlink meanwhile (a parallel bash) is not entered
  const visitDir = async (dir: string, handle: FileHandle | undefined): Promise<void> => {
    if (options.signal?.aborted) throw new Error('Operation aborted');
    const via = handle ? `/proc/self/fd/${handle.fd}` : dir;
    const layer = await loadLayer(dir, namesFor(dir), via);
    if (layer) layers.push(layer);
    let entries: Dirent[];
    try {
      entries = await readdir(via, { withFileTypes: true });
    } catch {
      entries = [];
    }
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (stopped) break;
      if (options.skipGitDir && entry.name === '.git') continue;
      const absolutePath = nodePath.join(dir, entry.name);
      const isDirectory = entry.isDirectory();
      if (isIgnored(layers, absolutePath, isDirectory)) continue;
      const relativePath = toPosix(nodePath.relative(root, absolutePath));
      if (visit({ absolutePath, relativePath, isDirectory, isSymbolicLink: entry.isSymbolicLink() })) {
        stopped = true;
        break;
      }
      if (!isDirectory) continue;
      const child = handle ? await openDirNoFollow(nodePath.join(via, entry.name)) : undefined;
      if (handle && !child) continue;
      try {
        await visitDir(absolutePath, child);
      } finally {
        await child?.close();
      }
    }
    if (layer) layers.pop();
  };
  const top = PROC_FD ? await openConfinedDir(root, options.confine) : undefined;
  if (PROC_FD && !top) return;
  try {
    await visitDir(root, top);
  } finally {
    await top?.close();
  }
}

const PROC_FD = existsSync('/proc/self/fd');

const DIR_FLAGS = fsConstants.O_RDONLY | fsConstants.O_DIRECTORY | fsConstants.O_NONBLOCK;

/** `path` opened as a directory without following a final symlink (undefined when it is not a directory now). */
async function openDirNoFollow(path: string): Promise<FileHandle | undefined> {
  try {
    return await open(path, DIR_FLAGS | fsConstants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
}

/**
 * `dir` opened as a directory, kept only when `confine` accepts the real path of what was opened (a symlink swapped in
 * after the caller confined the path is caught here); undefined otherwise. Read it through `/proc/self/fd/<fd>`.
 */
export async function openConfinedDir(
  dir: string,
  confine: ((real: string) => Promise<boolean>) | undefined,
): Promise<FileHandle | undefined> {
  let handle: FileHandle;
  try {
    handle = await open(dir, DIR_FLAGS);
  } catch {
    return undefined;
  }
  const real = await readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
  if (real !== undefined && (!confine || (await confine(real)))) return handle;
  await handle.close();
  return undefined;
}

function isAtOrBelow(p: string, dir: string): boolean {
  return p === dir || p.startsWith(dir.endsWith(nodePath.sep) ? dir : dir + nodePath.sep);
}

/**
 * Compiles a glob with the semantics of Rust's globset as fd uses it: `*` and `?` do not cross `/`, `**` as a whole
 * component crosses directories, `[...]` / `[!...]` classes, `{a,b}` alternatives, `\` escapes. Throws
 * `error parsing glob '<glob>': <reason>` like fd.
 */
export function globToRegExp(glob: string): RegExp {
  const fail = (reason: string): never => {
    throw new Error(`error parsing glob '${glob}': ${reason}`);
  };
  let out = '';
  let inAlternates = false;
  let i = 0;
  const atComponentStart = (k: number) => k === 0 || glob[k - 1] === '/';
  while (i < glob.length) {
    const c = glob[i];
    if (c === '*') {
      if (glob[i + 1] === '*') {
        const start = atComponentStart(i);
        const end = i + 2 === glob.length || glob[i + 2] === '/';
        if (start && end) {
          if (i + 2 === glob.length) {
            out += '.*';
            i += 2;
          } else {
            out += '(?:.*/)?';
            i += 3;
          }
          continue;
        }
        out += '[^/]*';
        i += 2;
        continue;
      }
      out += '[^/]*';
      i++;
    } else if (c === '?') {
      out += '[^/]';
      i++;
    } else if (c === '[') {
      let j = i + 1;
      let negated = false;
      if (glob[j] === '!' || glob[j] === '^') {
        negated = true;
        j++;
      }
      let cls = '';
      let first = true;
      while (j < glob.length && (glob[j] !== ']' || first)) {
        const ch = glob[j];
        if (ch === '\\' || ch === ']' || ch === '[' || ch === '^') cls += `\\${ch}`;
        else cls += ch;
        first = false;
        j++;
      }
      if (j >= glob.length) fail("unclosed character class; missing ']'");
      out += negated ? `[^/${cls}]` : `[${cls}]`;
      i = j + 1;
    } else if (c === '{') {
      if (inAlternates) fail('nested alternate groups are not allowed');
      inAlternates = true;
      out += '(?:';
      i++;
    } else if (c === '}') {
      if (!inAlternates) fail("unopened alternate group; missing '{'");
      inAlternates = false;
      out += ')';
      i++;
    } else if (c === ',' && inAlternates) {
      out += '|';
      i++;
    } else if (c === '\\') {
      if (i + 1 >= glob.length) fail("dangling '\\'");
      out += escapeRegExp(glob[i + 1]);
      i += 2;
    } else {
      out += escapeRegExp(c);
      i++;
    }
  }
  if (inAlternates) fail("unclosed alternate group; missing '}'");
  return new RegExp(`^${out}$`, 'u');
}

export function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
