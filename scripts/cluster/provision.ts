/**
 * Provisioning for the test cluster: PostgreSQL binaries (Debian package) and the Temporal server + SQL tool (built
 * once from Go modules into `~/.cache/keel/temporal-server-<version>/bin`). Idempotent; a warm call costs a `stat`.
 *
 * Contract: `ensurePostgres()` returns the directory holding `initdb` and `postgres`, installing the `postgresql`
 * package with apt-get (as root, `apt-get update` once first) when none is installed. `ensureTemporalServer()`
 * returns the paths of `temporal-server` and `temporal-sql-tool` at `TEMPORAL_SERVER_VERSION`; binaries only ever
 * appear by atomic rename, so an interrupted build leaves nothing half-written behind.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { isAbsolute, join } from 'node:path';

/** The server that Temporal CLI 1.9.1 embeds (`temporal --version` → "Server 1.32.0"). */
export const TEMPORAL_SERVER_VERSION = '1.32.0';

export type Log = (line: string) => void;

export function keelCacheDir(env = process.env): string {
  const base = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'keel');
}

function findPostgresBin(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')) && existsSync(join(root, v, 'bin', 'postgres')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : undefined;
}

/** Directory with `initdb`, `postgres`, `pg_isready` (Debian layout), installing the package if needed. */
export function ensurePostgres(log: Log): string {
  const found = findPostgresBin();
  if (found) return found;
  if (process.getuid?.() !== 0) {
    throw new Error('PostgreSQL is not installed and this is not root: run `apt-get install postgresql` first');
  }
  const started = performance.now();
  log('[cluster] installing PostgreSQL (apt-get update, apt-get install postgresql)…');
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  for (const args of [
    ['update', '-qq'],
    ['install', '-y', '-qq', '--no-install-recommends', 'postgresql'],
  ]) {
    const r = spawnSync('apt-get', args, { stdio: ['ignore', 'ignore', 'inherit'], env });
    if (r.status !== 0) throw new Error(`apt-get ${args.join(' ')} failed (exit ${r.status})`);
  }
  const bin = findPostgresBin();
  if (!bin) throw new Error('apt-get installed postgresql but no /usr/lib/postgresql/<v>/bin/initdb was found');
  log(`[cluster] PostgreSQL installed in ${seconds(started)}`);
  return bin;
}

export interface TemporalServerBinaries {
  server: string;
  sqlTool: string;
}

/** `temporal-server` and `temporal-sql-tool` at TEMPORAL_SERVER_VERSION, built with Go on first use. */
export async function ensureTemporalServer(log: Log, env = process.env): Promise<TemporalServerBinaries> {
  const dir = join(keelCacheDir(env), `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  const bins = { server: join(dir, 'bin', 'temporal-server'), sqlTool: join(dir, 'bin', 'temporal-sql-tool') };
  if (existsSync(bins.server) && existsSync(bins.sqlTool)) return bins;
  if (spawnSync('go', ['version']).status !== 0) {
    throw new Error(
      'Go is needed to build the Temporal server once (https://go.dev/dl), or put the binaries in ' + dir,
    );
  }
  const started = performance.now();
  log(
    `[cluster] building Temporal server ${TEMPORAL_SERVER_VERSION} and its SQL tool from Go modules (once: ~7 min on 2 idle cores, longer on busy ones)…`,
  );
  // A wrapper module: `go install …@v` refuses modules whose go.mod has replace directives; requiring it does not.
  // Its go.sum starts empty, so `go get` checks every module it downloads against the checksum database (GOSUMDB,
  // sum.golang.org by default) before writing go.sum: nothing unverified is built. (PostgreSQL comes through apt,
  // which checks the package signatures.)
  const src = join(dir, 'src');
  mkdirSync(src, { recursive: true });
  writeFileSync(join(src, 'go.mod'), 'module keel.local/temporal-server\n\ngo 1.24\n');
  const pkgs = ['go.temporal.io/server/cmd/server', 'go.temporal.io/server/cmd/tools/sql'];
  await run('go', ['get', ...pkgs.map((p) => `${p}@v${TEMPORAL_SERVER_VERSION}`)], src, log);
  mkdirSync(join(dir, 'bin'), { recursive: true });
  const tmp = mkdtempSync(join(dir, 'build-'));
  try {
    await run('go', ['build', '-o', join(tmp, 'temporal-server'), pkgs[0]], src, log);
    await run('go', ['build', '-o', join(tmp, 'temporal-sql-tool'), pkgs[1]], src, log);
    renameSync(join(tmp, 'temporal-sql-tool'), bins.sqlTool);
    renameSync(join(tmp, 'temporal-server'), bins.server);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  log(`[cluster] Temporal server built in ${seconds(started)} → ${dir}/bin`);
  return bins;
}

/** Runs a build command, echoing a progress line every 15 s so a cold build never looks hung. */
function run(cmd: string, args: string[], cwd: string, log: Log): Promise<void> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => {
      stderr = (stderr + d.toString()).slice(-4000);
    });
    const tick = setInterval(() => log(`[cluster]   ${cmd} ${args[0]} … ${seconds(started)}`), 15_000);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearInterval(tick);
      if (code === 0) resolve();
      else reject(new Error(`${cmd} ${args.join(' ')} failed (exit ${code}):\n${stderr}`));
    });
  });
}

export function seconds(since: number): string {
  return `${((performance.now() - since) / 1000).toFixed(1)} s`;
}
