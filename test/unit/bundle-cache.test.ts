/**
 * The on-disk workflow bundle cache (worker/bundle-cache.ts): a bundle is built once and reused while every file
 * webpack read is unchanged; an edit of any of them, or a new file next to them (which could change what an import
 * resolves to), builds it again; the replaced bundle is removed.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { bundleCacheDir, cachedWorkflowBundle } from '../../worker/bundle-cache.js';

// inside the repository: the bundler's entry point next to the workflows resolves @temporalio/workflow from there
const cacheRoot = fileURLToPath(new URL('../../node_modules/.cache/', import.meta.url));
mkdirSync(cacheRoot, { recursive: true });
const root = mkdtempSync(join(cacheRoot, 'keel-bundle-cache-test-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

describe('cachedWorkflowBundle', () => {
  it('reuses the bundle while its inputs are unchanged; an edited input builds it again', async () => {
    const dir = join(root, 'cache');
    const src = join(root, 'src');
    mkdirSync(src);
    writeFileSync(join(src, 'greeting.js'), `export const greeting = 'first greeting';\n`);
    const workflowsPath = join(src, 'index.ts');
    writeFileSync(
      workflowsPath,
      `import { greeting } from './greeting';\nexport async function wf() { return greeting; }\n`,
    );

    const first = await cachedWorkflowBundle({ workflowsPath }, quiet, dir);
    expect(first.code.includes('first greeting')).toBe(true);
    const bundles = () => readdirSync(dir).filter((f) => f.endsWith('.js'));
    expect(bundles()).toHaveLength(1);
    const builtAt = statSync(join(dir, bundles()[0])).mtimeMs;

    const again = await cachedWorkflowBundle({ workflowsPath }, quiet, dir);
    expect(again.code === first.code).toBe(true);
    expect(statSync(join(dir, bundles()[0])).mtimeMs).toBe(builtAt); // read, not written

    // an imported file (not the entry) edited: a new bundle with the new text, the old one removed
    writeFileSync(join(src, 'greeting.js'), `export const greeting = 'second greeting';\n`);
    const edited = await cachedWorkflowBundle({ workflowsPath }, quiet, dir);
    expect([edited.code.includes('second greeting'), edited.code.includes('first greeting')]).toEqual([true, false]);
    expect(bundles()).toHaveLength(1);

    // a new file next to an input (`./greeting` now resolves to greeting.ts, tried before greeting.js): built again
    writeFileSync(join(src, 'greeting.ts'), `export const greeting = 'third greeting';\n`);
    const shadowed = await cachedWorkflowBundle({ workflowsPath }, quiet, dir);
    expect(shadowed.code.includes('third greeting')).toBe(true);
    expect(bundles()).toHaveLength(1);

    // other options (a failure converter) are another bundle, next to the first
    writeFileSync(join(src, 'failures.ts'), `export const failureConverter = undefined;\n`);
    await cachedWorkflowBundle({ workflowsPath, failureConverterPath: join(src, 'failures.ts') }, quiet, dir);
    expect(bundles()).toHaveLength(2);
  }, 180_000);

  it('is off with KEEL_WORKFLOW_BUNDLE_CACHE=off, elsewhere with a directory, else in node_modules/.cache', () => {
    expect(bundleCacheDir({ KEEL_WORKFLOW_BUNDLE_CACHE: 'off' })).toBeUndefined();
    expect(bundleCacheDir({ KEEL_WORKFLOW_BUNDLE_CACHE: '/tmp/b' })).toBe('/tmp/b');
    expect(bundleCacheDir({})).toBe(join(cacheRoot, 'keel', 'workflow-bundles'));
  });
});
