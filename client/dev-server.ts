// Start a real Temporal dev server (Temporal CLI `server start-dev`) for Keel: tests, the demo, local runs.
//
// The CLI binary comes from scripts/temporal-cli.mjs (cached build, see there); the SDK's
// TestWorkflowEnvironment.createLocal() runs it as an ephemeral server with Keel's search attributes
// registered at startup (`--search-attribute Name=Type`).

import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { SearchAttributeKey } from '@temporalio/common/lib/search-attributes.js';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { ensureTemporalCli } from '../scripts/temporal-cli.mjs';

/** Keel's run status (e.g. running / waiting / completed / failed). */
export const KEEL_STATUS = defineSearchAttributeKey('KeelStatus', SearchAttributeType.KEYWORD);
/** Model id the run uses. */
export const KEEL_MODEL = defineSearchAttributeKey('KeelModel', SearchAttributeType.KEYWORD);
/** Number of agent turns so far. */
export const KEEL_TURNS = defineSearchAttributeKey('KeelTurns', SearchAttributeType.INT);
/** Accumulated model cost in USD. */
export const KEEL_COST_USD = defineSearchAttributeKey('KeelCostUsd', SearchAttributeType.DOUBLE);

/** The custom search attributes Keel registers on its dev server, as `createLocal({ server: { searchAttributes } })` takes them. */
export const KEEL_SEARCH_ATTRIBUTES: SearchAttributeKey<SearchAttributeType>[] = [
  KEEL_STATUS,
  KEEL_MODEL,
  KEEL_TURNS,
  KEEL_COST_USD,
];

/** Default port of the dev server's web UI when `ui: true` and no `uiPort` is given (the CLI's own default). */
export const DEFAULT_UI_PORT = 8233;

export interface StartDevServerOptions {
  /** SQLite file to persist to; in-memory (non-persistent) if omitted. */
  dbFilename?: string;
  /** gRPC frontend port; a random free port if omitted. */
  port?: number;
  /** Web UI port; defaults to 8233 when `ui` is true. Setting it implies `ui: true` unless `ui` is false. */
  uiPort?: number;
  /** Serve the web UI (default: false, unless `uiPort` is set). */
  ui?: boolean;
  /** Namespace created at startup (default "default"). */
  namespace?: string;
  /** Extra `temporal server start-dev` arguments, e.g. ['--dynamic-config-value', 'k=v']. */
  extraArgs?: string[];
  /** Progress lines (CLI provisioning, startup); default: stderr. */
  log?: (s: string) => void;
}

export interface DevServer {
  env: TestWorkflowEnvironment;
  /** host:port of the gRPC frontend. */
  address: string;
  /** http://127.0.0.1:<uiPort> when the UI is on. */
  uiUrl: string | undefined;
  /** Close the connections and stop the server (idempotent). */
  shutdown(): Promise<void>;
}

const IP = '127.0.0.1';

export async function startDevServer(opts: StartDevServerOptions = {}): Promise<DevServer> {
  const log = opts.log ?? ((s: string) => process.stderr.write(`${s}\n`));
  const path = await ensureTemporalCli({ log });
  const ui = opts.ui ?? opts.uiPort !== undefined;
  const uiPort = ui ? (opts.uiPort ?? DEFAULT_UI_PORT) : undefined;
  const started = Date.now();
  const env = await TestWorkflowEnvironment.createLocal({
    server: {
      executable: { type: 'existing-path', path },
      searchAttributes: KEEL_SEARCH_ATTRIBUTES,
      ip: IP,
      ...(opts.port !== undefined ? { port: opts.port } : {}),
      ...(opts.dbFilename !== undefined ? { dbFilename: opts.dbFilename } : {}),
      ...(opts.namespace !== undefined ? { namespace: opts.namespace } : {}),
      ui,
      ...(uiPort !== undefined ? { uiPort } : {}),
      ...(opts.extraArgs?.length ? { extraArgs: opts.extraArgs } : {}),
    },
  });
  const uiUrl = uiPort !== undefined ? `http://${IP}:${uiPort}` : undefined;
  log(
    `[keel] Temporal dev server up at ${env.address} in ${Date.now() - started} ms` +
      `${uiUrl ? `, UI at ${uiUrl}` : ''}${opts.dbFilename ? `, db ${opts.dbFilename}` : ''}`,
  );
  let stopping: Promise<void> | undefined;
  return {
    env,
    address: env.address,
    uiUrl,
    shutdown() {
      stopping ??= env.teardown();
      return stopping;
    },
  };
}
