/**
 * Which workflow code a Keel worker loads: the caller's bundle if given; else the prebuilt bundle that `npm run build`
 * writes next to the compiled code (`dist/workflow-bundle.js`, shipped in the package, so an installed worker starts
 * without bundling); else `workflows/` bundled at start (a few seconds; what a source checkout does).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { WorkerOptions } from '@temporalio/worker';

const sourceEntry = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/** The workflows' entry file: `workflows/index.ts` in a source checkout, `dist/workflows/index.js` when compiled. */
export const WORKFLOWS_PATH = existsSync(sourceEntry)
  ? sourceEntry
  : fileURLToPath(new URL('../workflows/index.js', import.meta.url));

/** Where `npm run build` writes the prebuilt bundle: `dist/workflow-bundle.js` (relative to `dist/worker/`). */
export const PREBUILT_BUNDLE_PATH = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));

/** The worker options that choose the workflow code (see the file comment for the order). */
export function workflowCode(
  bundle?: WorkerOptions['workflowBundle'],
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  if (bundle) return { workflowBundle: bundle };
  if (!existsSync(sourceEntry) && existsSync(PREBUILT_BUNDLE_PATH))
    return { workflowBundle: { codePath: PREBUILT_BUNDLE_PATH } };
  return { workflowsPath: WORKFLOWS_PATH };
}
