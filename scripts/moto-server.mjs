#!/usr/bin/env node
// Provisions and starts moto's S3-compatible server (PyPI `moto`, server mode) for the S3 payload-storage test,
// cached and idempotent like scripts/temporal-cli.mjs.
//
// Plain Node ESM, Node builtins only. Usable two ways:
//   - module:  import { ensureMotoServer, startMotoServer } from './scripts/moto-server.mjs';
//              const bin = await ensureMotoServer({ log: console.error });   // the moto_server executable
//              const s3 = await startMotoServer({ log: console.error });     // { endpoint, stop() }
//   - command: node scripts/moto-server.mjs          prints the moto_server path on stdout (progress on stderr)
//              node scripts/moto-server.mjs --serve  provisions, starts it on a free port, prints the endpoint, runs
//                                                    until Ctrl-C
//
// The venv lives in ${XDG_CACHE_HOME:-~/.cache}/keel/moto-<MOTO_VERSION>/venv, outside the repository, made with
// `python3 -m venv` and `pip install -r scripts/moto-server/requirements.txt` (moto[s3] and Flask, every package
// pinned) under a lock (temporal-cli/lock.mjs); a marker file holding the requirements' sha256 is written last, so a
// half-made venv or a changed pin list is made again. 26 s here with nothing cached (19 s with pip's cache), 0.1 s cached.
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { runIfMain } from './run-main.mjs';
import { withLock } from './temporal-cli/lock.mjs';
import { findOnPath, fmtDuration } from './temporal-cli/locate.mjs';
import { runWithProgress } from './temporal-cli/run-with-progress.mjs';

export const MOTO_VERSION = '5.2.5';
const REQUIREMENTS = join(dirname(fileURLToPath(import.meta.url)), 'moto-server', 'requirements.txt');

/** ${XDG_CACHE_HOME:-~/.cache}/keel/moto-<version> */
export function motoCacheDir(env = process.env) {
  const base = env.XDG_CACHE_HOME && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : join(homedir(), '.cache');
  return join(base, 'keel', `moto-${MOTO_VERSION}`);
}

const venvBin = (venv, name) =>
  process.platform === 'win32' ? join(venv, 'Scripts', `${name}.exe`) : join(venv, 'bin', name);

function requirementsHash() {
  return createHash('sha256').update(readFileSync(REQUIREMENTS)).digest('hex');
}

/** The cached moto_server when its venv is complete and matches the pinned requirements; else undefined. */
export function findReadyMotoServer(env = process.env) {
  const venv = join(motoCacheDir(env), 'venv');
  const marker = join(venv, '.keel-ready');
  const bin = venvBin(venv, 'moto_server');
  try {
    return readFileSync(marker, 'utf8').trim() === requirementsHash() && existsSync(bin) ? bin : undefined;
  } catch {
    return undefined;
  }
}

function findPython() {
  for (const name of process.platform === 'win32' ? ['python.exe', 'py.exe'] : ['python3', 'python']) {
    const p = findOnPath(name);
    if (!p) continue;
    const r = spawnSync(p, ['-c', 'import venv, sys; print(sys.version_info >= (3, 9))'], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    if (!r.error && r.status === 0 && r.stdout.trim() === 'True') return p;
  }
  return undefined;
}

/**
 * Absolute path of moto_server, provisioning its venv on first use (progress through `log` every 10 s).
 * Throws an Error saying why when it cannot (no Python 3.9+ with venv, PyPI unreachable…).
 * @param {{ log?: (line: string) => void, env?: NodeJS.ProcessEnv }} [o]
 * @returns {Promise<string>}
 */
export async function ensureMotoServer({ log = () => {}, env = process.env } = {}) {
  const ready = findReadyMotoServer(env);
  if (ready) return ready;
  const dir = motoCacheDir(env);
  mkdirSync(dir, { recursive: true });
  return withLock(
    {
      lockPath: join(dir, '.lock'),
      ready: () => findReadyMotoServer(env),
      log,
      what: `installing moto ${MOTO_VERSION}`,
    },
    async (touch) => {
      const again = findReadyMotoServer(env);
      if (again) return again;
      const python = findPython();
      if (!python) throw new Error('moto: no Python 3.9+ with the venv module on PATH (python3)');
      const venv = join(dir, 'venv');
      rmSync(venv, { recursive: true, force: true }); // half-made, or made from other pins
      const started = Date.now();
      log(`[keel] installing moto ${MOTO_VERSION} (S3 server) into ${venv}`);
      const mk = spawnSync(python, ['-m', 'venv', venv], { encoding: 'utf8', timeout: 120_000 });
      if (mk.error || mk.status !== 0) {
        throw new Error(
          `moto: python3 -m venv ${venv} failed: ${(mk.stderr || mk.error?.message || '').trim().split('\n').pop()}`,
        );
      }
      const pip = await runWithProgress(
        venvBin(venv, 'python'),
        [
          '-m',
          'pip',
          'install',
          '--no-input',
          '--disable-pip-version-check',
          '--progress-bar',
          'off',
          '-r',
          REQUIREMENTS,
        ],
        {
          cwd: dir,
          progress: () => `[keel] installing moto ${MOTO_VERSION}… ${fmtDuration(Date.now() - started)}`,
          touch,
          log,
        },
      );
      if (pip.error || pip.code !== 0) {
        const specific = pip.tail.filter((l) => /ERROR: |No matching distribution|urlopen error|Could not/.test(l));
        throw new Error(
          `moto: pip install -r ${REQUIREMENTS} failed (${pip.error ? pip.error.message : `exit code ${pip.code}`})` +
            (specific.length ? `: ${specific.slice(-2).join(' | ').trim()}` : ''),
        );
      }
      const bin = venvBin(venv, 'moto_server');
      if (!existsSync(bin)) throw new Error(`moto: ${bin} missing after pip install`);
      writeFileSync(join(venv, '.keel-ready'), `${requirementsHash()}\n`);
      log(`[keel] moto ${MOTO_VERSION} ready in ${fmtDuration(Date.now() - started)}: ${bin}`);
      return bin;
    },
  );
}

/**
 * Provisions moto (ensureMotoServer) and starts `moto_server` on 127.0.0.1 and a free port. Resolves once it listens.
 * @param {{ log?: (line: string) => void, env?: NodeJS.ProcessEnv }} [o]
 * @returns {Promise<{ endpoint: string, pid: number, stop: () => Promise<void> }>}
 */
export async function startMotoServer(o = {}) {
  const bin = await ensureMotoServer(o);
  const child = spawn(bin, ['-H', '127.0.0.1', '-p', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((res) => child.once('exit', res));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  const tail = [];
  const endpoint = await new Promise((res, rej) => {
    const timer = setTimeout(
      () => rej(new Error(`moto_server did not start within 60 s: ${tail.join(' | ')}`)),
      60_000,
    );
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        tail.push(line);
        if (tail.length > 20) tail.shift();
        const m = /Running on (http:\/\/127\.0\.0\.1:\d+)/.exec(line);
        if (m) {
          clearTimeout(timer);
          res(m[1]);
        }
      });
    }
    child.once('error', (err) => {
      clearTimeout(timer);
      rej(err);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      rej(new Error(`moto_server exited (${code}) before listening: ${tail.join(' | ')}`));
    });
  }).catch(async (err) => {
    await stop();
    throw err;
  });
  return { endpoint, pid: child.pid, stop };
}

async function main(argv) {
  const unknown = argv.filter((a) => a !== '--serve');
  if (unknown.length) {
    console.error(`usage: node scripts/moto-server.mjs [--serve]  (unknown: ${unknown.join(' ')})`);
    return 2;
  }
  const log = (line) => process.stderr.write(`${line}\n`);
  if (!argv.includes('--serve')) {
    process.stdout.write(`${await ensureMotoServer({ log })}\n`);
    return 0;
  }
  const s3 = await startMotoServer({ log });
  process.stdout.write(`${s3.endpoint}\n`);
  await new Promise((res) => process.once('SIGINT', res));
  await s3.stop();
  return 0;
}

runIfMain(import.meta.url, main);
