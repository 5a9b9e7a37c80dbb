/**
 * One real Temporal server and one workflow bundle for the whole `temporal` test project. Never a mocked Temporal.
 * The server is an existing one when `KEEL_TEST_TEMPORAL_ADDRESS` is set (`npm run test:cluster` sets it to its
 * PostgreSQL-backed cluster, with namespace `default` and Keel's search attributes), otherwise a dev server started
 * here (the project's own `temporal` CLI, SQLite in memory).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startDevServer } from '../../dev/dev-server.js';
import { WORKFLOWS_PATH } from '../../worker/create-worker.js';
import { cachedWorkflowBundle } from '../../worker/bundle-cache.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    workflowBundlePath: string;
  }
}

export default async function setup(project: TestProject) {
  const existing = process.env.KEEL_TEST_TEMPORAL_ADDRESS;
  const server = existing
    ? { address: existing, shutdown: async () => {} }
    : // the bench's setting: tasks are dispatched at once instead of after up to 50 ms (stock dev-server polling);
      // every test file polls task queues of its own under one build id: more than the 100 a deployment version holds
      // by default (past them a worker's polls are refused: "maximum number of task queues (100) have been registered")
      await startDevServer({
        log: (s) => process.stderr.write(`${s}\n`),
        extraArgs: [
          ...['--dynamic-config-value', 'history.transferProcessorMaxPollRPS=1000'],
          ...['--dynamic-config-value', 'matching.maxTaskQueuesInDeploymentVersion=1000'],
        ],
      });
  // through the on-disk cache (worker/bundle-cache.ts): built only when an input changed, and warm for the workers the
  // tests start in child processes (keel dev, keel worker, the demo), which use the same cache
  const { code } = await cachedWorkflowBundle({ workflowsPath: WORKFLOWS_PATH }, quietLogger);
  const dir = mkdtempSync(join(tmpdir(), 'keel-bundle-'));
  const bundlePath = join(dir, 'workflows.js');
  writeFileSync(bundlePath, code);
  project.provide('temporalAddress', server.address);
  project.provide('workflowBundlePath', bundlePath);
  return async () => {
    await server.shutdown();
    rmSync(dir, { recursive: true, force: true });
  };
}

const quietLogger = {
  log() {},
  trace() {},
  debug() {},
  info() {},
  warn(message: string) {
    process.stderr.write(`[bundler] ${message}\n`);
  },
  error(message: string) {
    process.stderr.write(`[bundler] ${message}\n`);
  },
};
