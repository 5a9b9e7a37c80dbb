/**
 * Which workflow code a Keel worker loads: the caller's bundle if given; else the prebuilt bundle that `npm run build`
 * writes next to the compiled code (`dist/workflow-bundle.js`, shipped in the package, so an installed worker starts
 * without bundling); else `workflows/` bundled at start — what a source checkout does: a few seconds the first time,
 * then read from the on-disk cache while no input changed (worker/bundle-cache.ts).
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { DataConverter } from '@temporalio/common';
import { Runtime, type WorkerOptions } from '@temporalio/worker';
import { encrypts, keelDataConverter } from '../node-common/payload-storage.js';
import { cachedWorkflowBundle } from './bundle-cache.js';
import { tracingFromEnv } from './tracing.js';

const sourceEntry = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/** The workflows' entry file: `workflows/index.ts` in a source checkout, `dist/workflows/index.js` when compiled. */
export const WORKFLOWS_PATH = existsSync(sourceEntry)
  ? sourceEntry
  : fileURLToPath(new URL('../workflows/index.js', import.meta.url));

const sealedFailuresSource = fileURLToPath(new URL('../common/sealed-failures.ts', import.meta.url));

/** The failure converter of an encrypting worker (common/sealed-failures.ts; `.js` when compiled). */
export const SEALED_FAILURES_PATH = existsSync(sealedFailuresSource)
  ? sealedFailuresSource
  : fileURLToPath(new URL('../common/sealed-failures.js', import.meta.url));

/** Where `npm run build` writes the prebuilt bundle: `dist/workflow-bundle.js` (relative to `dist/worker/`). */
export const PREBUILT_BUNDLE_PATH = fileURLToPath(new URL('../workflow-bundle.js', import.meta.url));

/** The prebuilt bundle of an encrypting worker: the same workflows with the sealing failure converter built in. */
export const PREBUILT_SEALED_BUNDLE_PATH = fileURLToPath(new URL('../workflow-bundle-sealed.js', import.meta.url));

/**
 * `converter` of an encrypting worker with the failure converter that seals messages and stack traces
 * (`SEALED_FAILURES_PATH`), unless the caller named a failure converter of their own (kept); any other converter
 * unchanged.
 */
export function sealingFailures(converter: DataConverter): DataConverter {
  return encrypts(converter) && !converter.failureConverterPath
    ? { ...converter, failureConverterPath: SEALED_FAILURES_PATH }
    : converter;
}

/**
 * The worker options that choose the workflow code (see the file comment for the order). `converter`: the worker's
 * (after `sealingFailures`); an encrypting worker's converter seals failures, so the prebuilt bundle must be the one
 * built with that converter — workflow failures are converted inside the bundle. `bundledBySdk`: something else shapes
 * the bundle (a plugin's workflow interceptors, `bundlerOptions`), so `Worker.create` bundles `workflows/` itself, with
 * them, uncached.
 */
export async function workflowCode(
  bundle: WorkerOptions['workflowBundle'] | undefined,
  converter: DataConverter,
  bundledBySdk = false,
): Promise<Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'>> {
  if (bundle) return { workflowBundle: bundle };
  const sealed = converter.failureConverterPath === SEALED_FAILURES_PATH;
  const prebuilt = sealed ? PREBUILT_SEALED_BUNDLE_PATH : PREBUILT_BUNDLE_PATH;
  if (!existsSync(sourceEntry) && existsSync(prebuilt)) return { workflowBundle: { codePath: prebuilt } };
  if (bundledBySdk) return { workflowsPath: WORKFLOWS_PATH };
  const { failureConverterPath, payloadConverterPath } = converter;
  const inputs = {
    workflowsPath: WORKFLOWS_PATH,
    ...(failureConverterPath ? { failureConverterPath } : {}),
    ...(payloadConverterPath ? { payloadConverterPath } : {}),
  };
  return { workflowBundle: await cachedWorkflowBundle(inputs, Runtime.instance().logger) };
}

/**
 * Starts reading or building the workflow code that `createAgentWorker` with its default options (converter and
 * tracing from the environment) will ask for, so the work runs beside other start-up work (the demo's dev server);
 * `createAgentWorker` then takes the same bundle. Never rejects: `createAgentWorker` reports a failure itself. Call it
 * once the process's Temporal `Runtime` is installed (its logger is the bundler's; else the SDK's default is installed).
 */
export function prepareWorkflowCode(): Promise<void> {
  const converter = sealingFailures(keelDataConverter());
  return workflowCode(undefined, converter, tracingFromEnv() !== undefined).then(
    () => undefined,
    () => undefined,
  );
}
