// Start a real Temporal dev server (Temporal CLI `server start-dev`) for Keel: tests, the demo, local runs.
//
// The CLI binary comes from scripts/temporal-cli.mjs (cached build, see there); the SDK's
// TestWorkflowEnvironment.createLocal() runs it as an ephemeral server with Keel's search attributes
// registered at startup (`--search-attribute Name=Type`).

import { TestWorkflowEnvironment } from '@temporalio/testing';
import { KEEL_SEARCH_ATTRIBUTE_KEYS } from '../common/search-attributes.js';
import { ensureTemporalCli } from '../scripts/temporal-cli.mjs';
import { devServerPids, killWithThisProcess } from './dev-server-lifeline.js';
import { describeHolder, fileHolder, portHolder, portIsFree, ResourceInUseError } from '../client/resource-holder.js';

export { KEEL_COST_USD, KEEL_MODEL, KEEL_STATUS, KEEL_TURNS } from '../common/search-attributes.js';

/** The custom search attributes Keel registers on its dev server (docs/architecture.md#visibility). */
export const KEEL_SEARCH_ATTRIBUTES = KEEL_SEARCH_ATTRIBUTE_KEYS;

/** Default port of the dev server's web UI when `ui: true` and no `uiPort` is given (the CLI's own default). */
export const DEFAULT_UI_PORT = 8233;

/** The Temporal CLI's `--log-level` values. */
export type ServerLogLevel = 'debug' | 'info' | 'warn' | 'error' | 'never';

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
  /**
   * The codec server the Web UI decodes payloads through (`--ui-codec-endpoint`, e.g. a `createCodecServer` URL); the
   * browser calls it, so it must allow the UI's origin.
   */
  uiCodecEndpoint?: string;
  /** Extra `temporal server start-dev` arguments, e.g. ['--dynamic-config-value', 'k=v']. */
  extraArgs?: string[];
  /** Progress lines (CLI provisioning, startup); default: stderr. */
  log?: (s: string) => void;
  /**
   * The least severe server log line printed (on stderr): `debug`, `info`, `warn`, `error` (default) or `never`. Even
   * `error` lines may be the server's own transient retries (e.g. `service failures … temporal-sys-worker-deployment`
   * under load); `keel dev` and the demo print none by default.
   */
  logLevel?: ServerLogLevel;
}

export interface DevServer {
  env: TestWorkflowEnvironment;
  /** host:port of the gRPC frontend. */
  address: string;
  /** http://127.0.0.1:<uiPort> when the UI is on. */
  uiUrl: string | undefined;
  /** Close the connections and stop the server (idempotent). */
  shutdown(): Promise<void>;
  /** Pids of the server process (Linux); it is killed when this process dies, even by SIGKILL. */
  serverPids: number[];
}

const IP = '127.0.0.1';

/**
 * Starts `temporal server start-dev`. Rejects with `ResourceInUseError` (one line naming the holder) when `port`,
 * the UI port or `dbFilename` is already taken by another process, instead of starting a server that cannot bind
 * and reporting whatever answers on the port as up.
 */
export async function startDevServer(opts: StartDevServerOptions = {}): Promise<DevServer> {
  const log = opts.log ?? ((s: string) => process.stderr.write(`${s}\n`));
  const ui = opts.ui ?? opts.uiPort !== undefined;
  const uiPort = ui ? (opts.uiPort ?? DEFAULT_UI_PORT) : undefined;
  await checkFree(opts.port, uiPort, opts.dbFilename);
  const path = await ensureTemporalCli({ log });
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
      // the server's WARN lines (at start and stop) are not for Keel's users; `never` drops its ERROR lines too
      log: { format: 'pretty', level: opts.logLevel ?? 'error' },
      // `--output none` drops the CLI's "CLI …/Server: …/Metrics: …" banner on stdout (server logs stay on stderr).
      extraArgs: [
        '--output',
        'none',
        ...(opts.uiCodecEndpoint !== undefined ? ['--ui-codec-endpoint', opts.uiCodecEndpoint] : []),
        ...(opts.extraArgs ?? []),
      ],
    },
  });
  // The server dies with this process, even when it is SIGKILLed (dev-server-lifeline.ts).
  const serverPids = devServerPids();
  const lifeline = killWithThisProcess(serverPids);
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
    serverPids,
    shutdown() {
      stopping ??= env.teardown().finally(() => lifeline.release());
      return stopping;
    },
  };
}

/** Rejects with ResourceInUseError when a port (on the server's interface) or the SQLite file is taken. */
async function checkFree(port: number | undefined, uiPort: number | undefined, dbFilename: string | undefined) {
  for (const [p, what] of [
    [port, 'gRPC'],
    [uiPort, 'Web UI'],
  ] as const) {
    if (p === undefined || p === 0 || (await portIsFree(p, IP))) continue;
    const holder = portHolder(p);
    throw new ResourceInUseError(
      `Port ${p} (${what})`,
      holder ? describeHolder(holder) : 'another process',
      holder?.pid,
    );
  }
  const holder = dbFilename !== undefined ? fileHolder(dbFilename) : undefined;
  if (holder) throw new ResourceInUseError(dbFilename!, describeHolder(holder), holder.pid);
}
