// package-lock.json names every registry package's tarball and its integrity, so `npm ci` / `npm install` on a fresh
// machine fetch the tarballs at once: without `resolved` (what an ~/.npmrc with omit-lockfile-registry-resolved=true
// writes, and the project's .npmrc turns off) npm first fetches each package's registry document to find its tarball.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  link?: boolean;
  name?: string;
}

const lock = JSON.parse(readFileSync(new URL('../../package-lock.json', import.meta.url), 'utf8')) as {
  packages: Record<string, LockEntry>;
};
const installed = Object.entries(lock.packages).filter(([path, e]) => path !== '' && !e.link);

describe('the lockfile', () => {
  it('gives each package its registry tarball and integrity', () => {
    const missing = installed.filter(([, e]) => !e.resolved || !e.integrity).map(([path]) => path);
    expect(missing).toEqual([]);
    const wrong = installed
      .filter(([path, e]) => {
        const name = e.name ?? path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
        const file = `${name.split('/').pop()}-${e.version}.tgz`;
        return e.resolved !== `https://registry.npmjs.org/${name}/-/${file}`;
      })
      .map(([path, e]) => `${path}: ${e.resolved}`);
    expect(wrong).toEqual([]);
    expect(installed.length).toBeGreaterThan(400);
  });

  it('stays that way: the project .npmrc keeps npm writing the tarballs', () => {
    expect(readFileSync(new URL('../../.npmrc', import.meta.url), 'utf8')).toMatch(
      /^omit-lockfile-registry-resolved=false$/m,
    );
  });
});
