/**
 * The replay corpus: `test/fixtures/histories/<keel-version>/<scenario>.json`, one folder per release, recorded once
 * (`npm run record-corpus`) and never changed. Each release folder holds `SHA256SUMS` (the `sha256sum` format, so
 * `sha256sum -c SHA256SUMS` checks it too) with the digest of every history in it, so that editing or deleting an older
 * release's history fails a test instead of silently weakening the replay gate. Recording a release only adds files.
 * The releases recorded before 0.3.0 (0.1.0, 0.2.0) keep their digests in the frozen `MANIFEST.json` beside the folders.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HISTORIES_DIR = fileURLToPath(new URL('../fixtures/histories/', import.meta.url));
/** The digests of the releases recorded before 0.3.0; never written again. */
export const LEGACY_MANIFEST_PATH = join(HISTORIES_DIR, 'MANIFEST.json');
export const SUMS_FILE = 'SHA256SUMS';

/** version → file name → sha256 (hex) of the file's bytes. */
export type Manifest = Record<string, Record<string, string>>;

/** Every release's digests: the legacy manifest's, then each folder's `SHA256SUMS` (a release in both throws). */
export function readManifest(): Manifest {
  const manifest: Manifest = existsSync(LEGACY_MANIFEST_PATH)
    ? (JSON.parse(readFileSync(LEGACY_MANIFEST_PATH, 'utf8')) as Manifest)
    : {};
  for (const version of corpusVersions()) {
    const sums = join(HISTORIES_DIR, version, SUMS_FILE);
    if (!existsSync(sums)) continue;
    if (manifest[version])
      throw new Error(`${version} has digests both in MANIFEST.json and in ${version}/${SUMS_FILE}`);
    manifest[version] = parseSums(readFileSync(sums, 'utf8'));
  }
  return manifest;
}

/** `sha256sum` output: `<hex>  <file>` per line. */
export function formatSums(files: Record<string, string>): string {
  return Object.entries(files)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([file, digest]) => `${digest}  ${file}\n`)
    .join('');
}

function parseSums(text: string): Record<string, string> {
  const files: Record<string, string> = {};
  for (const line of text.split('\n').filter(Boolean)) {
    const m = /^([0-9a-f]{64}) [ *](.+)$/.exec(line);
    if (!m) throw new Error(`not a sha256sum line: ${line}`);
    files[m[2]] = m[1];
  }
  return files;
}

export function sha256(bytes: Buffer | string): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** The release folders present on disk, oldest first (semver order). */
export function corpusVersions(): string[] {
  if (!existsSync(HISTORIES_DIR)) return [];
  return readdirSync(HISTORIES_DIR, { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name)
    .sort(compareVersions);
}

export function corpusFiles(version: string): string[] {
  return readdirSync(join(HISTORIES_DIR, version))
    .filter((f) => f.endsWith('.json'))
    .sort();
}

export function compareVersions(a: string, b: string): number {
  const pa = a.split('.').map(Number);
  const pb = b.split('.').map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}
