// Provisioning method 3 (last): `go install github.com/temporalio/cli/cmd/temporal@v<pinned>`. `go install pkg@version`
// refuses modules whose go.mod has `replace` directives, and 1.9.1's has one
// (`replace github.com/temporalio/cli/cliext => ./cliext`), so for 1.9.1 this fails within a second and says why.
// It stays last in the order for a pinned version that Go can install. What it builds is not the release binary, so
// digests.mjs does not apply: Go verifies every module it downloads against the checksum database (GOSUMDB,
// sum.golang.org by default) and go.sum instead.
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { runWithProgress } from './run-with-progress.mjs';
import { EXE, TEMPORAL_CLI_VERSION, findOnPath, fmtDuration, installBinary, isFile } from './locate.mjs';

export const GO_PACKAGE = `github.com/temporalio/cli/cmd/temporal@v${TEMPORAL_CLI_VERSION}`;

/**
 * @param {{ cacheDir: string, target: string, log: (line: string) => void, touch: () => void }} o
 * @returns {Promise<{ ok: true, version: string } | { ok: false, reason: string }>}
 */
export async function buildWithGo({ cacheDir, target, log, touch }) {
  const go = findOnPath(process.platform === 'win32' ? 'go.exe' : 'go');
  if (!go) return { ok: false, reason: '`go` is not on PATH' };
  const gobin = mkdtempSync(join(cacheDir, '.build-'));
  const started = Date.now();
  log(`[keel] trying go install ${GO_PACKAGE} (a build takes minutes on 2 cores)`);
  try {
    // The release build's -ldflags: stamp the version, drop debug info (smaller, faster link).
    const ldflags = `-s -w -X github.com/temporalio/cli/temporalcli.Version=${TEMPORAL_CLI_VERSION}`;
    const r = await runWithProgress(go, ['install', `-ldflags=${ldflags}`, GO_PACKAGE], {
      env: { ...process.env, GOBIN: gobin, GO111MODULE: 'on' },
      cwd: cacheDir, // outside any module, so the caller's go.work / go.mod cannot interfere
      progress: () => `[keel] go install ${GO_PACKAGE}… ${fmtDuration(Date.now() - started)}`,
      touch,
      log,
    });
    if (r.tail.some((l) => /contains one or\s*$|replace directives/.test(l))) {
      return {
        ok: false,
        reason:
          `v${TEMPORAL_CLI_VERSION}'s go.mod has \`replace\` directives, which \`go install pkg@version\` refuses ` +
          '(only a clone of the repository could build it)',
      };
    }
    if (r.error || r.code !== 0) {
      const last = r.tail.filter((l) => l.trim()).slice(-6);
      return {
        ok: false,
        reason: `go install ${GO_PACKAGE} failed (${r.error?.message ?? `exit code ${r.code}`})${last.length ? `:\n      ${last.join('\n      ')}` : ''}`,
      };
    }
    const built = join(gobin, EXE);
    if (!isFile(built)) return { ok: false, reason: `go install succeeded but produced no ${built}` };
    return installBinary(built, target);
  } finally {
    rmSync(gobin, { recursive: true, force: true });
  }
}
