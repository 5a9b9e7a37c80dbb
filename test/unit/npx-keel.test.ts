/**
 * `npx keel` prints only what the command prints: npm runs on whatever Node is first on the user's PATH (often older
 * than the project's Node 22) and would warn EBADENGINE on every call if the package declared `engines`; bin/keel.mjs
 * checks the Node version itself where it matters (dev, worker, demo).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('npx keel', () => {
  it('declares no engines for npm to warn about', () => {
    const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { engines?: unknown };
    expect(pkg.engines).toBeUndefined();
    // npm checks the lockfile's copy of the root package too
    const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, 'utf8')) as {
      packages: Record<string, { engines?: unknown }>;
    };
    expect(lock.packages[''].engines).toBeUndefined();
  });

  it('`npx keel --version` with the system Node first on PATH prints the version and nothing else', async () => {
    // the PATH a user's shell has: the system's node/npm, not the project's node_modules/.bin
    const path = (process.env.PATH ?? '')
      .split(':')
      .filter((d) => !d.includes('node_modules'))
      .join(':');
    const { stdout, stderr } = await promisify(execFile)('npx', ['keel', '--version'], {
      cwd: ROOT,
      env: { ...process.env, PATH: path },
      timeout: 60_000,
    });
    expect(stderr).toBe('');
    expect(stdout).toBe(
      `${(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version}\n`,
    );
  });
});
