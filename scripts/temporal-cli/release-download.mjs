// Provisioning method 1: the official CLI release from temporal.download, the same archive the Temporal SDK's own
// download fetches (`GET /cli/v<version>?platform=…&arch=…&format=tar.gz` answers `{ archiveUrl, fileToExtract }`).
// Keel downloads and unpacks it itself rather than through the SDK, because the SDK starts the binary it downloaded
// before anyone could check it: here the unpacked binary is checked against this platform's pinned SHA-256
// (digests.mjs) before it first runs or is cached. Needs internet; without it, this fails in well under a second (one
// HTTPS request, 5 s timeout at most). KEEL_TEMPORAL_DOWNLOAD_URL replaces https://temporal.download (a mirror); the
// digest check is the same.
import { spawnSync } from 'node:child_process';
import { createWriteStream, mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pinnedForThisPlatform, verifyThenInstall } from './digests.mjs';
import { EXE, TEMPORAL_CLI_VERSION, fmtDuration } from './locate.mjs';
import { PROGRESS_EVERY_MS } from './run-with-progress.mjs';

const PROBE_TIMEOUT_MS = 5_000;
const DOWNLOAD_TIMEOUT_MS = 15 * 60_000;
export const DEFAULT_DOWNLOAD_URL = 'https://temporal.download';

function downloadInfoUrl(base) {
  const platform = process.platform === 'darwin' ? 'darwin' : process.platform === 'win32' ? 'windows' : 'linux';
  const arch = process.arch === 'arm64' ? 'arm64' : 'amd64';
  return `${base}/cli/v${TEMPORAL_CLI_VERSION}?platform=${platform}&arch=${arch}&format=tar.gz`;
}

/**
 * @param {{ cacheDir: string, target: string, log: (line: string) => void, touch: () => void }} o
 * @returns {Promise<{ ok: true, version: string } | { ok: false, reason: string }>}
 */
export async function downloadRelease({ cacheDir, target, log, touch }) {
  const pinned = pinnedForThisPlatform();
  if (!pinned.ok) return pinned;
  const base = (process.env.KEEL_TEMPORAL_DOWNLOAD_URL || DEFAULT_DOWNLOAD_URL).replace(/\/+$/, '');
  const host = new URL(base).host;
  const url = downloadInfoUrl(base);
  let info;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
    if (!res.ok) return { ok: false, reason: `${url} answered HTTP ${res.status}` };
    info = await res.json();
  } catch (err) {
    const cause = /** @type {{ cause?: { code?: string } }} */ (err).cause?.code ?? /** @type {Error} */ (err).message;
    return { ok: false, reason: `${host} is not reachable (${cause}): no internet access` };
  }
  const { archiveUrl, fileToExtract } = info ?? {};
  if (typeof archiveUrl !== 'string' || !/^temporal(\.exe)?$/.test(String(fileToExtract))) {
    return {
      ok: false,
      reason: `${url} answered ${JSON.stringify(info)}, not { archiveUrl, fileToExtract: "${EXE}" }`,
    };
  }
  const dir = mkdtempSync(join(cacheDir, '.sdk-'));
  const started = Date.now();
  log(`[keel] downloading Temporal CLI v${TEMPORAL_CLI_VERSION} from ${archiveUrl}`);
  let received = 0;
  const timer = setInterval(() => {
    touch();
    log(`[keel] downloading ${archiveUrl}… ${(received / 1e6).toFixed(0)} MB, ${fmtDuration(Date.now() - started)}`);
  }, PROGRESS_EVERY_MS);
  try {
    const archive = join(dir, 'cli.tar.gz');
    try {
      const res = await fetch(archiveUrl, { signal: AbortSignal.timeout(DOWNLOAD_TIMEOUT_MS) });
      if (!res.ok || !res.body) return { ok: false, reason: `${archiveUrl} answered HTTP ${res.status}` };
      const body = Readable.fromWeb(res.body);
      body.on('data', (chunk) => (received += chunk.length));
      await pipeline(body, createWriteStream(archive));
    } catch (err) {
      return { ok: false, reason: `downloading ${archiveUrl} failed: ${/** @type {Error} */ (err).message}` };
    }
    // Only the named member, into our temp dir; nothing from the archive runs before the digest check.
    const x = spawnSync('tar', ['-xzf', archive, '-C', dir, fileToExtract], { encoding: 'utf8', timeout: 120_000 });
    if (x.error || x.status !== 0) {
      const why = (x.stderr || x.error?.message || '').trim().split('\n').pop();
      return { ok: false, reason: `could not extract ${fileToExtract} from ${archiveUrl}: ${why}` };
    }
    return await verifyThenInstall(join(dir, fileToExtract), target, `the ${EXE} binary in ${archiveUrl}`);
  } finally {
    clearInterval(timer);
    rmSync(dir, { recursive: true, force: true });
  }
}
