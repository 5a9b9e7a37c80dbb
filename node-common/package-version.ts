/**
 * Keel's own package: where it is installed and its version. Shared by the CLI (`keel --version`) and the worker (the
 * default build id, worker/deployment.ts); Node I/O, so never imported by workflows/.
 */
import { existsSync, readFileSync } from 'node:fs';

/** The package root: `../` from `node-common/` in a checkout, `../../` from `dist/node-common/` in a compiled package. */
export const PACKAGE_ROOT: URL =
  [new URL('../', import.meta.url), new URL('../../', import.meta.url)].find((u) =>
    existsSync(new URL('package.json', u)),
  ) ?? new URL('../', import.meta.url);

/** Keel's package version (package.json). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(new URL('package.json', PACKAGE_ROOT), 'utf8')) as { version: string }).version;
}
