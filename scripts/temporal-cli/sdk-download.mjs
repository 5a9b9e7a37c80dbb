// Provisioning method 1: the download built into the Temporal SDK (@temporalio/testing → core-bridge), which fetches
// the official CLI release from temporal.download. Needs internet; without it, this fails in well under a second
// (one HTTPS request, 5 s timeout at most) instead of leaving the SDK to retry. The binary the SDK leaves is checked
// against this platform's pinned SHA-256 (digests.mjs) before Keel runs or caches it. The SDK itself starts it once
// (it downloads only as part of starting a dev server), so on a platform without a pinned digest nothing is
// downloaded at all.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { pinnedForThisPlatform, verifyThenInstall } from './digests.mjs';
import { EXE, TEMPORAL_CLI_VERSION } from './locate.mjs';

const PROBE_TIMEOUT_MS = 5_000;

function downloadInfoUrl() {
  const platform = process.platform === 'darwin' ? 'darwin' : process.platform === 'win32' ? 'windows' : 'linux';
  const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
  return `https://temporal.download/cli/v${TEMPORAL_CLI_VERSION}?platform=${platform}&arch=${arch}`;
}

/**
 * @param {{ cacheDir: string, target: string, log: (line: string) => void }} o
 * @returns {Promise<{ ok: true, version: string } | { ok: false, reason: string }>}
 */
export async function downloadWithSdk({ cacheDir, target, log }) {
  const pinned = pinnedForThisPlatform();
  if (!pinned.ok) return pinned;
  const url = downloadInfoUrl();
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    if (!res.ok) return { ok: false, reason: `${url} answered HTTP ${res.status}` };
  } catch (err) {
    const cause = /** @type {{ cause?: { code?: string } }} */ (err).cause?.code ?? /** @type {Error} */ (err).message;
    return { ok: false, reason: `temporal.download is not reachable (${cause}): no internet access` };
  }
  const dir = mkdtempSync(join(cacheDir, '.sdk-'));
  log(`[keel] downloading Temporal CLI v${TEMPORAL_CLI_VERSION} through the Temporal SDK (temporal.download)`);
  try {
    const { TestWorkflowEnvironment } = await import('@temporalio/testing');
    // The SDK downloads only as part of starting a server: start one, stop it, keep the binary.
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable: { type: 'cached-download', version: `v${TEMPORAL_CLI_VERSION}`, downloadDir: dir },
        ip: '127.0.0.1',
        extraArgs: ['--output', 'none'],
      },
    });
    await env.teardown();
    const obtained = readdirSync(dir).find((name) => name.startsWith('temporal') && !name.endsWith('.downloading'));
    if (!obtained) return { ok: false, reason: `the SDK started a server but left no ${EXE} in ${dir}` };
    return await verifyThenInstall(join(dir, obtained), target, `the ${EXE} binary the SDK downloaded`);
  } catch (err) {
    return { ok: false, reason: `the SDK download failed: ${/** @type {Error} */ (err).message}` };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
