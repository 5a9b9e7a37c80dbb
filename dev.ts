/**
 * `keel/dev`: Temporal's dev server for tests, demos and local runs — `startDevServer` runs `temporal server start-dev`
 * (the Temporal CLI provisioned by scripts/temporal-cli.mjs) through `@temporalio/testing`, with Keel's search
 * attributes registered. It is an entry of its own so that `keel/worker` (a production worker) loads neither
 * `@temporalio/testing` nor the provisioning scripts (test/unit/entry-imports.test.ts checks that).
 */
export {
  startDevServer,
  DEFAULT_UI_PORT,
  KEEL_SEARCH_ATTRIBUTES,
  type DevServer,
  type ServerLogLevel,
  type StartDevServerOptions,
} from './dev/dev-server.js';
