/**
 * The replay corpus: `test/fixtures/histories/<keel-version>/<scenario>.json`, one folder per release, recorded once
 * (`npm run record-corpus`) and never changed. `MANIFEST.json` holds the sha256 of every file, so that editing or
 * deleting an older release's history fails a test instead of silently weakening the replay gate.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const HISTORIES_DIR = fileURLToPath(new URL('../fixtures/histories/', import.meta.url));
export const MANIFEST_PATH = join(HISTORIES_DIR, 'MANIFEST.json');

/** version → file name → sha256 (hex) of the file's bytes. */
export type Manifest = Record<string, Record<string, string>>;

export function readManifest(): Manifest {
  return existsSync(MANIFEST_PATH) ? (JSON.parse(readFileSync(MANIFEST_PATH, 'utf8')) as Manifest) : {};
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
