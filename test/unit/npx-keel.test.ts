/**
 * Keel on a Node that is too old (issue 20 item 13). package.json declares `engines: { node: ">=22.19" }` (pi-ai's
 * floor), so npm says so at install instead of twenty dependencies' EBADENGINE warnings alone; the cost is npm's own
 * EBADENGINE notice on `npx keel` in this checkout when the system Node is older (the command still runs, on the
 * project's Node 22). bin/keel.mjs names the way out where the worker needs Node 22 (dev, worker, demo): in a checkout,
 * `npx keel …`; through npx already or in a project that installed the package, a Node 22 for that project.
 */
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const pkg = JSON.parse(readFileSync(`${ROOT}package.json`, 'utf8')) as { version: string; engines?: unknown };

/** The PATH a user's shell has: the system's node/npm, not the project's node_modules/.bin. */
const systemPath = (process.env.PATH ?? '')
  .split(':')
  .filter((d) => !d.includes('node_modules'))
  .join(':');

/** A Node older than 22.19 on this machine (the system's), if any. */
const oldNode = ['/usr/bin/node', '/bin/node', '/usr/local/bin/node'].find((bin) => {
  try {
    const [major, minor] = execFileSync(bin, ['-p', 'process.versions.node'], { encoding: 'utf8' })
      .trim()
      .split('.')
      .map(Number);
    return major < 22 || (major === 22 && minor < 19);
  } catch {
    return false;
  }
});

function bin(node: string, args: string[], env: NodeJS.ProcessEnv) {
  return promisify(execFile)(node, [`${ROOT}bin/keel.mjs`, ...args], { cwd: ROOT, env, timeout: 60_000 });
}

describe('npx keel and the Node version', () => {
  it('declares engines node >=22.19 (package.json and the lockfile root)', () => {
    expect(pkg.engines).toEqual({ node: '>=22.19' });
    const lock = JSON.parse(readFileSync(`${ROOT}package-lock.json`, 'utf8')) as {
      packages: Record<string, { engines?: unknown }>;
    };
    expect(lock.packages[''].engines).toEqual({ node: '>=22.19' });
  });

  it('`npx keel --version` with the system Node first on PATH prints the version (and at most npm’s engine notice)', async () => {
    const { stdout, stderr } = await promisify(execFile)('npx', ['keel', '--version'], {
      cwd: ROOT,
      env: { ...process.env, PATH: systemPath },
      timeout: 60_000,
    });
    expect(stdout).toBe(`${pkg.version}\n`);
    const notice = stderr.split('\n').filter((l) => l !== '');
    for (const line of notice) expect(line).toMatch(/^npm warn EBADENGINE /);
    if (notice.length > 0) expect(stderr).toContain(`required: { node: '>=22.19' }`);
  });

  // skipped only where every Node on this machine is new enough
  it.skipIf(!oldNode)(
    'on Node < 22.19 `keel dev` names a way out that fits where it runs (needs an old Node)',
    async () => {
      const env: NodeJS.ProcessEnv = { ...process.env, PATH: systemPath };
      delete env.npm_command;
      const version = execFileSync(oldNode!, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim();
      const head = `[keel] Node ${version}: the worker needs Node >= 22.19 (pi-ai). `;
      // `node bin/keel.mjs dev` in a checkout: npx runs it on the project's Node 22
      const plain = await bin(oldNode!, ['dev', '--help'], env);
      expect(plain.stderr).toBe(`${head}Use \`npx keel dev\`, which runs the project's Node 22.\n`);
      // through npx already (npm sets npm_command=exec): there is no Node 22 here to point at
      const npx = await bin(oldNode!, ['worker', '--help'], { ...env, npm_command: 'exec' });
      expect(npx.stderr).toBe(
        `${head}Install Node 22.19 or later (https://nodejs.org), or give this project its own: ` +
          '`npm install --save-dev --save-exact node@22`, then `npx keel worker` runs on it.\n',
      );
      // commands that need no worker say nothing
      expect((await bin(oldNode!, ['--version'], env)).stderr).toBe('');
    },
  );
});
