/** Worker Deployment Versioning defaults (worker/deployment.ts): deployment `keel`, build id `<version>+<git sha>`. */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { packageVersion } from '../../node-common/package-version.js';
import { defaultBuildId, workerDeploymentOptions } from '../../worker/deployment.js';

const ROOT = new URL('../../', import.meta.url);
const pkg = JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')) as { version: string };

describe('worker deployment versioning options', () => {
  it.runIf(existsSync(new URL('.git', ROOT)))(
    "the default build id is the package version plus the checkout's git sha; $KEEL_BUILD_ID overrides it",
    () => {
      const sha = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim();
      expect(packageVersion()).toBe(pkg.version);
      expect(defaultBuildId({})).toBe(`${pkg.version}+${sha}`);
      expect(defaultBuildId({ KEEL_BUILD_ID: 'custom-7' })).toBe('custom-7');
    },
  );

  it('a worker declares deployment keel and pins its runs; the name and the build id can be set', () => {
    expect(workerDeploymentOptions({ buildId: 'b-1' })).toEqual({
      useWorkerVersioning: true,
      version: { deploymentName: 'keel', buildId: 'b-1' },
      defaultVersioningBehavior: 'PINNED',
    });
    expect(workerDeploymentOptions({ deploymentName: 'other', buildId: 'b-2' }).version).toEqual({
      deploymentName: 'other',
      buildId: 'b-2',
    });
    expect(workerDeploymentOptions({}).version.buildId).toBe(defaultBuildId());
  });
});
