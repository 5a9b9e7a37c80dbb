/**
 * A real Temporal cluster on this machine: PostgreSQL (initdb in a temp dir, a non-root user, a non-default port),
 * the `temporal` and `temporal_visibility` schemas applied with the SQL tool, and frontend, history, matching and
 * worker as four separate `temporal-server` processes with SQL visibility; namespace `default` with Keel's search
 * attributes. Optionally a fifth process, a second frontend that requires mutual TLS (self-signed CA).
 *
 * Contract: `startCluster()` resolves once a workflow can be started on namespace `default` at `address`; `kill`
 * sends SIGKILL to one service (for `postgres`: an immediate shutdown, crash-like, crash recovery at the next start)
 * and resolves once it exited; `start` brings it back with the same config and data; `stop` ends every process this module
 * started and deletes its temp dirs (kept when KEEL_CLUSTER_KEEP=1). Ports: `portBase` .. `portBase+11` and `pgPort`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chownSync, closeSync, mkdtempSync, openSync, rmSync, writeFileSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto'; // CommonJS: no named exports under plain Node ESM
import { KEEL_SEARCH_ATTRIBUTE_KEYS } from '../../common/search-attributes.js';
import { ensurePostgres, ensureTemporalServer, type Log, seconds } from './provision.js';
import { makeTestPki, type TestPki } from './tls.js';

export const SERVICES = ['history', 'matching', 'frontend', 'worker'] as const;
export type ServiceName = (typeof SERVICES)[number] | 'frontend-tls';
/** What `kill` and `start` act on: a Temporal service or the database. */
export type ProcessName = ServiceName | 'postgres';

export interface ClusterOptions {
  /** First of 12 consecutive ports for the services (default `$KEEL_CLUSTER_PORT` or 17233). */
  portBase?: number;
  /** PostgreSQL port (default `$KEEL_CLUSTER_PG_PORT` or 15432). */
  pgPort?: number;
  /** Also start a frontend that requires mTLS, on `portBase + 9` (default true). */
  tls?: boolean;
  log?: Log;
}

export interface Cluster {
  /** host:port of the plain frontend. */
  address: string;
  /** host:port of the mTLS frontend and the PKI it trusts, when `tls` is on. */
  tls?: { address: string; pki: TestPki };
  pgPort: number;
  /** Directory with the services' configs and logs (`<service>.log`, `postgres.log`). */
  dir: string;
  kill(name: ProcessName): Promise<void>;
  start(name: ProcessName): Promise<void>;
  stop(): Promise<void>;
}

const HOST = '127.0.0.1';
const DB_USER = 'temporal';
const NAMESPACE = 'default';

export async function startCluster(opts: ClusterOptions = {}): Promise<Cluster> {
  const log = opts.log ?? ((s: string) => process.stderr.write(`${s}\n`));
  const portBase = opts.portBase ?? Number(process.env.KEEL_CLUSTER_PORT ?? 17233);
  const pgPort = opts.pgPort ?? Number(process.env.KEEL_CLUSTER_PG_PORT ?? 15432);
  const wantTls = opts.tls ?? true;
  const pgBin = ensurePostgres(log);
  const bins = await ensureTemporalServer(log);
  const dir = mkdtempSync(join(tmpdir(), 'keel-cluster-'));
  const procs = new Map<string, ChildProcess>();
  const logFile = (name: string) => openSync(join(dir, `${name}.log`), 'a');

  // ---- PostgreSQL, as a non-root user (postgres refuses to run as root)
  const started = performance.now();
  const pgUser = process.getuid?.() === 0 ? userIds('postgres') : undefined;
  const pgData = mkdtempSync(join(tmpdir(), 'keel-pgdata-'));
  if (pgUser) chownSync(pgData, pgUser.uid, pgUser.gid);
  const asPg = pgUser ? { uid: pgUser.uid, gid: pgUser.gid } : {};
  execFileSync(join(pgBin, 'initdb'), ['-D', pgData, '-U', DB_USER, '--auth=trust', '-E', 'UTF8', '--no-sync'], {
    ...asPg,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const startPostgres = async () => {
    const out = logFile('postgres');
    const child = spawn(
      join(pgBin, 'postgres'),
      [
        '-D',
        pgData,
        '-p',
        String(pgPort),
        '-k',
        pgData,
        '-c',
        `listen_addresses=${HOST}`,
        '-c',
        'fsync=off',
        '-c',
        'max_connections=200',
      ],
      { ...asPg, stdio: ['ignore', out, out] },
    );
    closeSync(out);
    procs.set('postgres', child);
    await waitForPort(pgPort, 30_000, child, 'postgres');
  };
  await startPostgres();
  log(`[cluster] PostgreSQL up on ${HOST}:${pgPort} (initdb + start ${seconds(started)}), data ${pgData}`);

  // ---- schemas
  const schemaStarted = performance.now();
  for (const [db, schema] of [
    ['temporal', 'temporal'],
    ['temporal_visibility', 'visibility'],
  ]) {
    const sql = (...args: string[]) =>
      execFileSync(
        bins.sqlTool,
        ['--plugin', 'postgres12', '--ep', HOST, '-p', String(pgPort), '-u', DB_USER, '--db', db, ...args],
        {
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
    sql('create-database');
    sql('setup-schema', '-v', '0.0');
    sql('update-schema', '--schema-name', `postgresql/v12/${schema}`);
  }
  log(`[cluster] schemas temporal and temporal_visibility applied (${seconds(schemaStarted)})`);

  // ---- Temporal services, one process each
  const pki = wantTls ? makeTestPki(dir) : undefined;
  const dynamicConfig = join(dir, 'dynamicconfig.yaml');
  writeFileSync(dynamicConfig, JSON.stringify(DYNAMIC_CONFIG, null, 2));
  const configFor = (service: ServiceName) => {
    const path = join(dir, `${service}.yaml`);
    // JSON is YAML: the server's loader reads it as is.
    writeFileSync(
      path,
      JSON.stringify(
        serverConfig({ portBase, pgPort, dynamicConfig, pki: service === 'frontend-tls' ? pki : undefined }),
        null,
        2,
      ),
    );
    return path;
  };
  const startService = async (service: ServiceName) => {
    const out = logFile(service);
    const child = spawn(
      bins.server,
      [
        '--config-file',
        configFor(service),
        '--allow-no-auth',
        'start',
        '--service',
        service === 'frontend-tls' ? 'frontend' : service,
      ],
      {
        stdio: ['ignore', out, out],
      },
    );
    closeSync(out);
    procs.set(service, child);
    await waitForPort(grpcPort(portBase, service), 60_000, child, service);
  };
  const servicesStarted = performance.now();
  for (const s of SERVICES) await startService(s);
  if (pki) await startService('frontend-tls');
  const address = `${HOST}:${portBase}`;
  log(
    `[cluster] ${[...SERVICES, ...(pki ? ['frontend-tls'] : [])].join(', ')} started as separate processes (${seconds(servicesStarted)})`,
  );

  const nsStarted = performance.now();
  await registerNamespace(address);
  log(
    `[cluster] namespace ${NAMESPACE} with ${KEEL_SEARCH_ATTRIBUTE_KEYS.map((k) => k.name).join(', ')} ready (${seconds(nsStarted)})`,
  );
  log(
    `[cluster] Temporal cluster ready at ${address}${pki ? `, mTLS frontend at ${HOST}:${portBase + 9}` : ''} in ${seconds(started)}; logs in ${dir}`,
  );

  const stopProcess = async (name: string, signal: NodeJS.Signals) => {
    const child = procs.get(name);
    procs.delete(name);
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    await exited;
    clearTimeout(timer);
  };
  let stopping: Promise<void> | undefined;
  return {
    address,
    tls: pki ? { address: `${HOST}:${portBase + 9}`, pki } : undefined,
    pgPort,
    dir,
    kill: (name) => stopProcess(name, name === 'postgres' ? 'SIGQUIT' : 'SIGKILL'),
    start: (name) => (name === 'postgres' ? startPostgres() : startService(name)),
    stop() {
      stopping ??= (async () => {
        for (const name of [...procs.keys()].filter((n) => n !== 'postgres')) await stopProcess(name, 'SIGTERM');
        await stopProcess('postgres', 'SIGINT');
        if (process.env.KEEL_CLUSTER_KEEP !== '1') {
          rmSync(dir, { recursive: true, force: true });
          rmSync(pgData, { recursive: true, force: true });
        }
      })();
      return stopping;
    },
  };
}

// Offsets from portBase: frontend 0 (membership 1, HTTP 2), history 3/4, matching 5/6, worker 7/8, frontend-tls 9/10/11.
const OFFSETS: Record<ServiceName, number> = { frontend: 0, history: 3, matching: 5, worker: 7, 'frontend-tls': 9 };

function grpcPort(portBase: number, service: ServiceName): number {
  return portBase + OFFSETS[service];
}

/** Server settings close to the CLI dev server's where the tests rely on them (eager search attributes, long ids). */
const DYNAMIC_CONFIG = {
  'system.forceSearchAttributesCacheRefreshOnRead': [{ value: true }],
  'limit.maxIDLength': [{ value: 255 }],
  'history.transferProcessorMaxPollRPS': [{ value: 1000 }],
  // every test file polls task queues of its own with one build id: more than the default 100 per deployment version
  'matching.maxTaskQueuesInDeploymentVersion': [{ value: 1000 }],
};

function serverConfig(o: { portBase: number; pgPort: number; dynamicConfig: string; pki?: TestPki }) {
  const sqlStore = (databaseName: string, maxConns: number) => ({
    sql: {
      pluginName: 'postgres12',
      databaseName,
      connectAddr: `${HOST}:${o.pgPort}`,
      connectProtocol: 'tcp',
      user: DB_USER,
      password: '',
      maxConns,
      maxIdleConns: maxConns,
      maxConnLifetime: '1h',
    },
  });
  const rpc = (offset: number, http = false) => ({
    grpcPort: o.portBase + offset,
    membershipPort: o.portBase + offset + 1,
    bindOnIP: HOST,
    ...(http ? { httpPort: o.portBase + offset + 2 } : {}),
  });
  return {
    log: { stdout: true, level: 'info' },
    persistence: {
      defaultStore: 'postgres-default',
      visibilityStore: 'postgres-visibility',
      numHistoryShards: 4,
      datastores: {
        'postgres-default': sqlStore('temporal', 20),
        'postgres-visibility': sqlStore('temporal_visibility', 10),
      },
    },
    global: {
      membership: { maxJoinDuration: '30s', broadcastAddress: HOST },
      ...(o.pki
        ? {
            tls: {
              frontend: {
                server: {
                  certFile: o.pki.serverCert,
                  keyFile: o.pki.serverKey,
                  requireClientAuth: true,
                  clientCaFiles: [o.pki.caCert],
                },
              },
            },
          }
        : {}),
    },
    services: {
      frontend: { rpc: o.pki ? rpc(OFFSETS['frontend-tls'], true) : rpc(OFFSETS.frontend, true) },
      history: { rpc: rpc(OFFSETS.history) },
      matching: { rpc: rpc(OFFSETS.matching) },
      worker: { rpc: rpc(OFFSETS.worker) },
    },
    clusterMetadata: {
      enableGlobalNamespace: false,
      failoverVersionIncrement: 10,
      masterClusterName: 'active',
      currentClusterName: 'active',
      clusterInformation: {
        active: { enabled: true, initialFailoverVersion: 1, rpcName: 'frontend', rpcAddress: `${HOST}:${o.portBase}` },
      },
    },
    dcRedirectionPolicy: { policy: 'noop' },
    // the system worker (and anything internal) talks to the plain frontend, never to the mTLS one
    publicClient: { hostPort: `${HOST}:${o.portBase}` },
    dynamicConfigClient: { filepath: o.dynamicConfig, pollInterval: '10s' },
  };
}

function userIds(name: string): { uid: number; gid: number } {
  const id = (flag: string) => Number(execFileSync('id', [flag, name], { encoding: 'utf8' }).trim());
  return { uid: id('-u'), gid: id('-g') };
}

function waitForPort(port: number, timeoutMs: number, child: ChildProcess, name: string): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const attempt = () => {
      if (child.exitCode !== null || child.signalCode !== null) {
        reject(
          new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before listening on ${port}; see its log`),
        );
        return;
      }
      const socket = createConnection({ host: HOST, port });
      socket.once('connect', () => {
        socket.destroy();
        resolve();
      });
      socket.once('error', () => {
        socket.destroy();
        if (performance.now() > deadline) reject(new Error(`${name} not listening on ${port} after ${timeoutMs} ms`));
        else setTimeout(attempt, 100);
      });
    };
    attempt();
  });
}

/** Retries `fn` every 250 ms while it throws, up to `timeoutMs`; rethrows the last error after that. */
async function retry<T>(timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      return await fn();
    } catch (err) {
      if (performance.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

const GRPC_ALREADY_EXISTS = 6;

async function registerNamespace(address: string): Promise<void> {
  const connection = await retry(60_000, () => Connection.connect({ address, connectTimeout: '2s' }));
  const ignoreExists = (err: unknown) => {
    if ((err as { code?: number }).code !== GRPC_ALREADY_EXISTS) throw err;
  };
  try {
    await retry(60_000, () =>
      connection.workflowService
        .registerNamespace({ namespace: NAMESPACE, workflowExecutionRetentionPeriod: msToTs('1 day') })
        .then(() => undefined, ignoreExists),
    );
    const { IndexedValueType } = proto.temporal.api.enums.v1;
    const searchAttributes = Object.fromEntries(
      KEEL_SEARCH_ATTRIBUTE_KEYS.map((k) => [k.name, IndexedValueType[`INDEXED_VALUE_TYPE_${k.type}`]]),
    );
    // right after the namespace is created this can fail once with "Namespace default is not found": retry
    await retry(60_000, () =>
      connection.operatorService
        .addSearchAttributes({ namespace: NAMESPACE, searchAttributes })
        .then(() => undefined, ignoreExists),
    );
    // ready when a workflow can actually be started (the namespace has reached every service's cache)
    await retry(60_000, async () => {
      const workflowId = `keel-cluster-probe-${Date.now()}`;
      await connection.workflowService.startWorkflowExecution({
        namespace: NAMESPACE,
        workflowId,
        workflowType: { name: 'probe' },
        taskQueue: { name: 'keel-cluster-probe' },
        requestId: workflowId,
      });
      await connection.workflowService.terminateWorkflowExecution({
        namespace: NAMESPACE,
        workflowExecution: { workflowId },
      });
    });
  } finally {
    await connection.close();
  }
}
