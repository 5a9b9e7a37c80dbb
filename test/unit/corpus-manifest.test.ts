/**
 * The replay corpus is append-only: every release's recorded histories stay byte for byte as recorded. A change of
 * the workflow's command sequence gets a new release folder (npm run record-corpus), never a re-recording.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  compareVersions,
  corpusFiles,
  corpusVersions,
  HISTORIES_DIR,
  LEGACY_MANIFEST_PATH,
  readManifest,
  sha256,
  SUMS_FILE,
} from '../corpus/manifest.js';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

/**
 * The digest of each release's `SHA256SUMS` (releases from 0.3.0), pinned once the release is recorded, as
 * `MANIFEST.json`'s is: a history edited together with its `SHA256SUMS`, or a whole release folder deleted, fails.
 * Recording a release adds one line here (the test below prints it).
 */
const RELEASED_SUMS: Record<string, string> = {
  '0.3.0': 'fd013e6db434e812cd8b2754710bab3404d4241363c3244ff5247408bfb56ef0',
  '0.4.0': '8d109578d1cc56b2c24f1da15a6db4f6c516c474c1c50436c9717af76e30b158',
  '0.4.1': '2d9c664da80f4a06a80c750b7ffb6c210ab4c357b82ce6e6d18aa5d49bd00946',
  '0.4.2': 'd29a7501f4df23817d46a97fe8ab1d3a8b664441e6795a4b188d253ab7c0a3fa',
  '0.5.0': '9384782f50762d8c8ed2674276c0c354b551105657c1d541f137b766bc167f44',
  '0.6.0': '7ea0bfc84bbdb09c9da1aba8fc50da0ad858099ac96a1eb76b657adc4f5bb31c',
  '0.6.2': 'aaa24388cab1293e3c955fb6a1524c0087d7c7db97e6f6c1122f4cc17ff39105',
  '0.6.3': '8a7a7b63111b579a11a27b98bc7f66f0f7aeb3bf2ba283df364d0e404e2a9b59',
  '0.7.0': 'c45516e015b17d5638094681bd98ce8f7fa04998a7c8a5f6f619a1473551b63b',
  '0.8.0': 'fa9866ed3edb85b251271d0a948124938b2bcb7521775a09fb3ed4de2000f6dc',
  '0.9.0': 'e74345342a4b579358f91305f091e90e60fae066ee7ec929964c8da39a287242',
  '0.10.0': '7a75b0afaa11607ca680385e933cab4efc21be7fab02fe591cbd3e2337832e23',
  '0.11.0': '8b1a8886b1947db04aaa5d217b271ec12934c345e36196a7d98b4e88f93414a7',
  '0.11.1': 'e60c403487de025e31660fa139de2669c34f0132b277817922fc92c2040f4c36',
  '0.12.0': '0ec47d9a0bd635be68c41f5c798218fa42cc8aa4b946d2639b455f10120cecec',
  '0.13.0': '703dbb7187b921104d379a3eba803bad461d913ad9cc19f8ec3702522d5efe57',
  '0.13.1': '2f5bd7740b9c66b35643e2b21beca840500a668c000c36b5083fec7b670a87c9',
  '0.13.2': 'b9eb5112229674704310e0b0df8f5c8186cdd1ed459aa6532dd02a512232a764',
};

describe('replay corpus manifest', () => {
  const manifest = readManifest();

  it('lists every release folder on disk, and every listed release is on disk', () => {
    // in release order (0.10.0 after 0.9.0), not string order
    expect(corpusVersions()).toEqual(Object.keys(manifest).sort(compareVersions));
  });

  it('the manifest of the releases before 0.3.0 is frozen: later releases bring their own SHA256SUMS', () => {
    expect(sha256(readFileSync(LEGACY_MANIFEST_PATH)), 'MANIFEST.json was edited').toBe(
      '8555d16bcc4443af7dab902deaaf7e2a8d960bd952e84f72cbb49aeb8f4435cd',
    );
  });

  it('every release with a SHA256SUMS has its digest pinned, and every pinned release is on disk unchanged', () => {
    for (const version of corpusVersions()) {
      const sums = join(HISTORIES_DIR, version, SUMS_FILE);
      if (!existsSync(sums)) continue;
      const line = `'${version}': '${sha256(readFileSync(sums))}'`;
      expect(
        Object.keys(RELEASED_SUMS),
        `${version}/${SUMS_FILE} is not pinned: add ${line} to RELEASED_SUMS`,
      ).toContain(version);
    }
    for (const [version, digest] of Object.entries(RELEASED_SUMS)) {
      const sums = join(HISTORIES_DIR, version, SUMS_FILE);
      expect(existsSync(sums), `${version}/${SUMS_FILE} was deleted`).toBe(true);
      expect(sha256(readFileSync(sums)), `${version}/${SUMS_FILE} was edited`).toBe(digest);
    }
  });

  it('has a corpus for the current package version', () => {
    expect(Object.keys(manifest), `no corpus for ${pkg.version}: run npm run record-corpus`).toContain(pkg.version);
  });

  for (const [version, files] of Object.entries(manifest)) {
    it(`${version}: the files are exactly those recorded, unchanged`, () => {
      expect(corpusFiles(version)).toEqual(Object.keys(files).sort());
      for (const [file, digest] of Object.entries(files)) {
        expect(sha256(readFileSync(join(HISTORIES_DIR, version, file))), `${version}/${file} was modified`).toBe(
          digest,
        );
      }
    });
  }

  it('the seven required scenarios are in every release', () => {
    for (const version of Object.keys(manifest)) {
      const names = Object.keys(manifest[version]);
      for (const scenario of [
        'every-feature',
        'session-waiting',
        'mid-parallel-batch',
        'continue-as-new-chain.0',
        'batch-chain.0',
        'cancelled',
        'model-failed',
      ]) {
        expect(names, `${version} lacks ${scenario}`).toContain(`${scenario}.json`);
      }
    }
  });
});
