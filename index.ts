/**
 * Keel's public API, all of it: `keel/client`, `keel/worker` and `keel/dev` together (what `keel` exported before the entries were
 * split by runtime; kept for compatibility). Prefer the entry of the runtime you are in: `keel/client` for a service
 * that only starts and reads runs (it does not load `@temporalio/worker`), `keel/worker` for a worker process,
 * `keel/workflow` inside workflow code.
 */
export * from './client.js';
export * from './worker.js';
export * from './dev.js';
