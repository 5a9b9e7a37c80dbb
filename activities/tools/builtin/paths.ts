/**
 * Path normalisation (Pi reference §C.0) and workspace confinement for the built-in tools.
 *
 * Every path a model gives is normalised (`@` prefix, Unicode spaces, `~`, `file://`), resolved against the workspace
 * root, and refused when it leaves the workspace: `..`, absolute paths elsewhere, and symlinks whose target is outside
 * (real paths are resolved, for a file that does not exist yet through its nearest existing ancestor). The refusal is an
 * Error the model can read and correct.
 */
import { constants as fsConstants } from 'node:fs';
import { access, lstat, readlink, realpath } from 'node:fs/promises';
import { homedir, tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const UNICODE_SPACES = /[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g;
const NARROW_NO_BREAK_SPACE = '\u202F';

/** Pi's `expandPath`: one leading `@` stripped, Unicode spaces → " ", `~` → home, `file://` URL → path. */
export function expandPath(filePath: string): string {
  let p = filePath.startsWith('@') ? filePath.slice(1) : filePath;
  p = p.replace(UNICODE_SPACES, ' ');
  if (p === '~') return homedir();
  if (p.startsWith('~/')) return path.join(homedir(), p.slice(2));
  if (p.startsWith('file://')) return fileURLToPath(p);
  return p;
}

/** Absolute stays absolute (normalised); relative is resolved against `cwd`. */
export function resolveToCwd(filePath: string, cwd: string): string {
  const expanded = expandPath(filePath);
  return path.isAbsolute(expanded) ? path.normalize(expanded) : path.resolve(cwd, expanded);
}

/**
 * `read`'s alternatives for a file that does not exist, in order: macOS screenshot names (U+202F before AM/PM), the NFD
 * form, a curly apostrophe instead of `'`, and NFD + curly apostrophe. The plain resolution comes first.
 */
export function readPathCandidates(filePath: string, cwd: string): string[] {
  const plain = resolveToCwd(filePath, cwd);
  const amPm = plain.replace(/ (AM|PM)\./g, `${NARROW_NO_BREAK_SPACE}$1.`);
  const nfd = plain.normalize('NFD');
  const curly = plain.replace(/'/g, '\u2019');
  const nfdCurly = nfd.replace(/'/g, '\u2019');
  const out: string[] = [];
  for (const c of [plain, amPm, nfd, curly, nfdCurly]) if (!out.includes(c)) out.push(c);
  return out;
}

export async function pathExists(p: string): Promise<boolean> {
  try {
    await access(p, fsConstants.F_OK);
    return true;
  } catch {
    return false;
  }
}

function isInside(child: string, parent: string): boolean {
  if (child === parent) return true;
  const prefix = parent.endsWith(path.sep) ? parent : parent + path.sep;
  return child.startsWith(prefix);
}

/**
 * The real path of `p` even when it does not exist: symlinks are followed (also dangling ones, through their target),
 * and a missing tail is appended to the real path of its nearest existing ancestor.
 */
export async function realResolve(p: string, depth = 0): Promise<string> {
  if (depth > 40)
    throw Object.assign(new Error(`ELOOP: too many symbolic links encountered, '${p}'`), { code: 'ELOOP' });
  try {
    return await realpath(p);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT' && code !== 'ENOTDIR') throw error;
  }
  let isLink = false;
  try {
    isLink = (await lstat(p)).isSymbolicLink();
  } catch {
    // p itself does not exist (or a parent component is a dangling link): resolve the parent.
  }
  if (isLink) {
    const target = await readlink(p);
    return realResolve(path.resolve(path.dirname(p), target), depth + 1);
  }
  const parent = path.dirname(p);
  if (parent === p) return p;
  return path.join(await realResolve(parent, depth), path.basename(p));
}

const BASH_LOG_NAME = /^pi-bash-[0-9a-f]{16}\.log$/;

/**
 * The workspace the file tools are confined to: the tools' cwd plus any `allowedRoots`. `logDir` is the one directory
 * whose bash full-output logs `read` may open outside it (the run's private temporary directory); without it, the OS
 * tmpdir (the standalone tools' logs).
 */
export class Workspace {
  /** The workspace root as given (resolved, not real). */
  readonly root: string;
  readonly roots: string[];
  readonly logDir: string;
  private realRootsPromise?: Promise<string[]>;

  constructor(cwd: string, allowedRoots: readonly string[] = [], logDir?: string) {
    this.root = path.resolve(cwd);
    this.roots = [this.root, ...allowedRoots.map((r) => path.resolve(this.root, expandPath(r)))];
    this.logDir = path.resolve(logDir ?? tmpdir());
  }

  private realRoots(): Promise<string[]> {
    this.realRootsPromise ??= Promise.all(this.roots.map((r) => realResolve(r).catch(() => r)));
    return this.realRootsPromise;
  }

  outsideError(given: string): Error {
    return new Error(`Path "${given}" is outside the workspace ${this.root}. Use a path inside ${this.root}.`);
  }

  /** The root (lexical or real) that contains `absolute`, if any. */
  async containingRoot(absolute: string): Promise<string | undefined> {
    const real = await this.realRoots();
    const all = [...this.roots, ...real];
    let best: string | undefined;
    for (const r of all) if (isInside(absolute, r) && (!best || r.length > best.length)) best = r;
    return best;
  }

  /** Whether a real path (symlinks resolved, e.g. of an open descriptor) is inside one of the real roots. */
  async containsReal(real: string): Promise<boolean> {
    return (await this.realRoots()).some((r) => isInside(real, r));
  }

  /**
   * Throws unless `absolute` (already normalised) stays inside the workspace, both lexically (before touching the file
   * system) and after resolving symlinks.
   */
  async confine(absolute: string, given: string): Promise<void> {
    const realRoots = await this.realRoots();
    const candidates = [...this.roots, ...realRoots];
    if (!candidates.some((r) => isInside(absolute, r))) throw this.outsideError(given);
    const real = await realResolve(absolute);
    if (!realRoots.some((r) => isInside(real, r))) throw this.outsideError(given);
  }

  /** Normalise, resolve against the root and confine. Returns the absolute (not real) path to use for I/O and messages. */
  async resolve(given: string): Promise<string> {
    const absolute = resolveToCwd(given, this.root);
    await this.confine(absolute, given);
    return absolute;
  }

  /**
   * `read`'s resolution: the first existing candidate among {@link readPathCandidates} (each confined before it is
   * probed), else the plain resolution. A bash full-output log of this run (`<logDir>/pi-bash-<16 hex>.log`, a regular
   * file) may be read even though it is outside the workspace: the bash tool points the model at it.
   */
  async resolveForRead(given: string): Promise<string> {
    const candidates = readPathCandidates(given, this.root);
    const plain = candidates[0];
    if (await isBashLog(plain, this.logDir)) return plain;
    for (const c of candidates) {
      try {
        await this.confine(c, given);
      } catch (error) {
        if (c === plain) throw error;
        continue;
      }
      if (await pathExists(c)) return c;
    }
    return plain;
  }

  /** The real path a bash full-output log of this workspace may be opened at, when `absolute` names one. */
  bashLogRealPath(absolute: string): Promise<string | undefined> {
    return bashLogRealPath(absolute, this.logDir);
  }
}

/**
 * The real path a bash full-output log may be opened at (`<real logDir>/pi-bash-<16 hex>.log`, `logDir` default the
 * OS tmpdir), when `absolute` names one; undefined otherwise.
 */
export async function bashLogRealPath(absolute: string, logDir: string = tmpdir()): Promise<string | undefined> {
  if (path.dirname(absolute) !== path.resolve(logDir) || !BASH_LOG_NAME.test(path.basename(absolute))) return undefined;
  return path.join(await realpath(logDir), path.basename(absolute));
}

async function isBashLog(absolute: string, logDir: string): Promise<boolean> {
  if (path.dirname(absolute) !== path.resolve(logDir) || !BASH_LOG_NAME.test(path.basename(absolute))) return false;
  try {
    return (await lstat(absolute)).isFile();
  } catch {
    return false;
  }
}
