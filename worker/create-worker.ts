/**
 * `createAgentWorker()`: a Temporal worker that runs Keel and nothing else — a thin wrapper that resolves the
 * connection (node-common/connection.ts: address, TLS, API key, envconfig profile), connects, and calls `Worker.create`
 * with `keelPlugin()` (worker/plugin.ts). Services that run their own workflows too use the plugin directly.
 */
import { Client } from '@temporalio/client';
import {
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type LogLevel,
  type WorkerOptions,
} from '@temporalio/worker';
import type { AgentHooks } from '../activities/hooks.js';
import type { ApprovalsOptions } from '../activities/approvals/verify-approval.js';
import type { ModelRegistry } from '../activities/model/provider.js';
import type { ToolDefinition } from '../activities/tools/define-tool.js';
import type { AgentDefinition } from '../activities/agents/define-agent.js';
import type { GraderDefinition } from '../activities/graders.js';
import {
  connectOptions,
  describeConnection,
  resolveConnection,
  type ConnectionSettings,
} from '../node-common/connection.js';
import { setCurrentVersion, workerDeploymentOptions, type DeploymentOptions } from './deployment.js';
import { keelPlugin } from './plugin.js';
import type { McpServers } from '../activities/mcp/config.js';
import type { FleetStreamOption } from '../node-common/fleet-stream/config.js';
import { sealingFailures, workflowCode } from './workflow-code.js';
import { flushTracing, tracingFromEnv, tracingPlugin, type TracingOptions } from './tracing.js';
import { keelDataConverter, type PayloadStorageOption } from '../node-common/payload-storage.js';
import type { EncryptionOption } from '../node-common/encryption.js';
import { DEFAULT_TASK_QUEUE, type WorkerRole } from '../common/task-queues.js';
import type { ProviderLimits } from '../common/limits/definition.js';

export { WORKFLOWS_PATH } from './plugin.js';

/**
 * Worker options passed through to `Worker.create` as they are: concurrency limits
 * (`maxConcurrentActivityTaskExecutions`, …), `tuner`, `interceptors`, `plugins` (appended after Keel's), and the rest.
 * The fields Keel sets itself from `AgentWorkerOptions` are left out.
 */
export type PassThroughWorkerOptions = Omit<
  Partial<WorkerOptions>,
  'connection' | 'namespace' | 'taskQueue' | 'workflowBundle' | 'workflowsPath'
>;

/** Connection settings (address, namespace, tls, apiKey, profile, configFile; see ConnectionSettings) and Keel's own. */
export interface AgentWorkerOptions extends ConnectionSettings {
  /** An existing connection; then address, TLS and API key are not used (the namespace still is). */
  connection?: NativeConnection;
  /** Default `keel`. */
  taskQueue?: string;
  /**
   * What this worker runs (README "Worker roles"), default `all`:
   * - `all`: everything; it polls `taskQueue`, the tool queue `<taskQueue>-tools` and its home queue, so one worker
   *   serves runs alone;
   * - `model`: the workflows and the model and compaction calls, on `taskQueue`; no tool runs in its process (give it
   *   the same `tools` as the tools workers: their names and schemas go to the model);
   * - `tools`: tool calls only, on `<taskQueue>-tools` and its home queue; no workflows and no model calls, so it can
   *   be started without any provider key. Unversioned (tool activities are not pinned to a build): `versioning`,
   *   `buildId` and `workflowBundle` are not used.
   */
  role?: WorkerRole;
  tools?: ToolDefinition[];
  /** Sub-agents (`defineAgent`, README "Sub-agents"); see KeelPluginOptions.agents. */
  agents?: AgentDefinition[];
  /** The deepest sub-agent a run may start; default 3 (see KeelPluginOptions.maxAgentDepth). */
  maxAgentDepth?: number;
  /** MCP servers whose tools runs may name as `<server>__<tool>` (see KeelPluginOptions.mcpServers). */
  mcpServers?: McpServers;
  /** Model providers by prefix (see KeelPluginOptions.models). */
  models?: ModelRegistry;
  /** Graders for graded batches (`defineGrader`), besides the built-ins (README "Graded batches"). */
  graders?: GraderDefinition[];
  hooks?: AgentHooks;
  /**
   * A prebuilt workflow bundle (`bundleWorkflowCode`); default: the package's prebuilt bundle, else `workflows/` bundled
   * at start (kept on disk while its inputs are unchanged: worker/bundle-cache.ts).
   */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /**
   * Passed to the Temporal worker; 0 makes every workflow task replay from history (determinism checks only: a local
   * activity in flight is dropped and its workflow task times out, 10 s, then runs again — a placed tool's call and a
   * lean sub-agent's or batch task's input check; docs/local-tools.md#limits).
   */
  maxCachedWorkflows?: number;
  identity?: string;
  /**
   * Worker Deployment Versioning (worker/deployment.ts). Default on: deployment `keel`, build id from `buildId`,
   * `$KEEL_BUILD_ID` or `<package version>+<git sha>`, made current once this worker polls. `false`: an unversioned
   * worker (runs are not pinned; every worker of the task queue must then run compatible workflow code).
   */
  versioning?: DeploymentOptions | false;
  /** Shorthand for `versioning.buildId`. */
  buildId?: string;
  /** Anything else for `Worker.create` (see PassThroughWorkerOptions). */
  workerOptions?: PassThroughWorkerOptions;
  /** OpenTelemetry tracing (worker/tracing.ts); default: OTLP when the OTEL_* variables name an endpoint; false: off. */
  tracing?: TracingOptions | false;
  /**
   * Where payloads over 256 KiB go instead of history (README "Large transcripts"): default Keel's filesystem driver
   * under `.keel/payloads`; `{ driver }` for another (S3); `false` keeps everything inline (then a transcript over
   * 1.5 MB cannot be carried across continue-as-new). Clients reading these runs need the same setting.
   */
  payloadStorage?: PayloadStorageOption;
  /**
   * Payload encryption (README "Encryption"): every payload this worker and its activities' client write is sealed
   * with AES-256-GCM under the key ring's primary key, in history and in the payload store alike. Default: the key ring
   * `$KEEL_ENCRYPTION_KEYS` or `$KEEL_ENCRYPTION_KEYS_FILE` names (none: no encryption); `{ keysFile }` or `{ keyRing }`:
   * that one; `false`: off. An encrypting worker fails a run started without encryption (a clear start) at once, with
   * a text saying what the client must pass. `workerOptions.dataConverter` is kept and composed with Keel's (its codecs
   * run first, then encryption; its externalStorage is used when `payloadStorage` is not given).
   */
  encryption?: EncryptionOption;
  /**
   * The least severe SDK log line printed (`TRACE` … `ERROR`; default `$KEEL_LOG_LEVEL`, else `WARN`), used when no
   * Temporal `Runtime` is installed yet: the SDK's own default prints every worker state change at `INFO`. A Runtime
   * you install before (`Runtime.install({ logger })`) is kept as it is.
   */
  logLevel?: LogLevel;
  /** Who may approve tool calls (README "Who may approve"; see KeelPluginOptions.approvals). */
  approvals?: ApprovalsOptions;
  /** Provider limits shared by the namespace's runs (docs/provider-limits.md; see KeelPluginOptions.providerLimits). */
  providerLimits?: ProviderLimits;
  /**
   * The fleet stream transport (docs/live-output.md#fleet-transport; see KeelPluginOptions.stream): `{ redis: url }`,
   * default `$KEEL_STREAM_REDIS_URL`, else none.
   */
  stream?: FleetStreamOption | false;
}

export interface AgentWorker {
  worker: Worker;
  /** The deployment version this worker serves; undefined for an unversioned worker. */
  version?: { deploymentName: string; buildId: string };
  /** The task queue only this worker polls, for runs' worker-local tools (worker affinity); set once `run()` started it. */
  homeQueue(): string | undefined;
  /** A client on the worker's connection and namespace (closing it is not needed; `shutdown` closes the connection). */
  client: Client;
  /** Runs until `shutdown()`; rejects if the worker fails. */
  run(): Promise<void>;
  /**
   * Resolves once this worker's build is current and its task queue routes to it (immediately for an unversioned
   * worker, or one that does not make itself current); call after `run()`. Runs started before that may wait for
   * the routing. Rejects after 60 s with what to do.
   */
  ready(): Promise<void>;
  /** Stops polling, waits for the tasks in hand, then closes the connection; a second call returns the first's promise. */
  shutdown(): Promise<void>;
}

/**
 * A Temporal worker that runs `agentWorkflow` and Keel's activities with the given tools, model providers and hooks
 * (or, by `role`, only the model side or only the tools side). API keys of model providers are never passed here per
 * run: providers read them from the worker's environment (or files named by `<NAME>_FILE`).
 */
export async function createAgentWorker(opts: AgentWorkerOptions = {}): Promise<AgentWorker> {
  installQuietRuntime(opts.logLevel);
  const resolved = resolveConnection(opts);
  const { plugins = [], ...workerOptions } = opts.workerOptions ?? {};
  const tracing = opts.tracing === false ? undefined : (opts.tracing ?? tracingFromEnv());
  const role = opts.role ?? 'all';
  const deployment =
    opts.versioning === false || role === 'tools'
      ? undefined
      : workerDeploymentOptions({ ...opts.versioning, ...(opts.buildId ? { buildId: opts.buildId } : {}) });
  const taskQueue = opts.taskQueue ?? DEFAULT_TASK_QUEUE;
  const { dataConverter: base, ...rest } = workerOptions;
  // an encrypting worker seals failure messages and stack traces too (its bundle is built with that converter)
  const dataConverter = sealingFailures(keelDataConverter(opts.payloadStorage, { encryption: opts.encryption, base }));
  const { workflowBundle } =
    role === 'tools'
      ? { workflowBundle: undefined }
      : await workflowCode(opts.workflowBundle, dataConverter, shapesBundle(tracing, plugins, rest));
  const keel = keelPlugin({
    tools: opts.tools,
    ...(opts.agents ? { agents: opts.agents } : {}),
    ...(opts.maxAgentDepth !== undefined ? { maxAgentDepth: opts.maxAgentDepth } : {}),
    ...(opts.mcpServers ? { mcpServers: opts.mcpServers } : {}),
    models: opts.models,
    hooks: opts.hooks,
    ...(opts.approvals ? { approvals: opts.approvals } : {}),
    ...(opts.stream !== undefined ? { stream: opts.stream } : {}),
    ...(opts.graders ? { graders: opts.graders } : {}),
    ...(opts.providerLimits ? { providerLimits: opts.providerLimits } : {}),
    largePayloads: dataConverter.externalStorage !== undefined,
    role,
    ...(opts.payloadStorage && opts.payloadStorage.storeRetry ? { storeRetry: opts.payloadStorage.storeRetry } : {}),
  });
  // after the plugin: a worker that refuses to start (its approvals setting) opens no connection
  const connection = opts.connection ?? (await connectNative(resolved));
  const worker = await Worker.create({
    ...rest,
    connection,
    namespace: resolved.namespace,
    taskQueue,
    // tracing first: its activity span must be active when Keel's model and tool spans start
    plugins: [...(tracing ? [tracingPlugin(tracing)] : []), keel, ...plugins],
    // the caller's bundle, else the package's prebuilt one (an installed package), else workflows/ bundled through the
    // on-disk cache; none only when Worker.create must bundle (shapesBundle: the plugin names workflows/)
    ...(workflowBundle ? { workflowBundle } : {}),
    dataConverter,
    ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
    ...(opts.identity ? { identity: opts.identity } : {}),
    ...(deployment ? { workerDeploymentOptions: deployment } : {}),
  });
  const client = new Client({ connection, namespace: resolved.namespace, dataConverter });
  let running: Promise<void> | undefined;
  let current: Promise<void> = Promise.resolve();
  const stopping = new AbortController();
  const makeCurrent = deployment !== undefined && opts.versioning !== false && (opts.versioning?.makeCurrent ?? true);
  return {
    worker,
    client,
    homeQueue: () => keel.homeQueue,
    ...(deployment
      ? { version: { deploymentName: deployment.version.deploymentName, buildId: deployment.version.buildId } }
      : {}),
    run() {
      if (!running) {
        running = worker.run();
        if (makeCurrent && deployment) {
          // the version exists once the worker has polled: retried until the server accepts it
          current = setCurrentVersion(
            client,
            resolved.namespace,
            deployment.version,
            taskQueue,
            undefined,
            stopping.signal,
          );
          // a shutdown stops the attempts: not a failure to report
          current.catch((err) => stopping.signal.aborted || process.stderr.write(`[keel] ${String(err)}\n`));
        }
      }
      return running;
    },
    ready() {
      return current;
    },
    shutdown: once(async () => {
      const version = deployment?.version;
      stopping.abort(
        new Error(
          `the worker shut down before build ${version?.buildId} became current in deployment ${version?.deploymentName}`,
        ),
      );
      if (running) await untilStarted(worker, running);
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      await current.catch(() => undefined); // no call on the connection after it closes
      await flushTracing();
      if (!opts.connection) await connection.close();
    }),
  };
}

/** `f` called at most once: later calls return its first promise. */
function once<T>(f: () => Promise<T>): () => Promise<T> {
  let first: Promise<T> | undefined;
  return () => (first ??= f());
}

/**
 * Whether something besides Keel shapes the workflow bundle — a plugin's workflow interceptors (tracing's, the
 * caller's plugins), `bundlerOptions`, `interceptors.workflowModules` — so `Worker.create` must bundle with it.
 */
function shapesBundle(tracing: TracingOptions | undefined, plugins: unknown[], options: PassThroughWorkerOptions) {
  return (
    tracing !== undefined || plugins.length > 0 || !!options.bundlerOptions || !!options.interceptors?.workflowModules
  );
}

/** Installs a Runtime whose logger prints `level` and above, unless a Runtime is installed already (then: no change). */
function installQuietRuntime(level: LogLevel | undefined): void {
  try {
    Runtime.install({
      logger: new DefaultLogger(level ?? (process.env.KEEL_LOG_LEVEL as LogLevel | undefined) ?? 'WARN'),
    });
  } catch {
    // a Runtime is installed already (the application's own, or an earlier worker's): it stays
  }
}

/**
 * Resolves once `run()` has started polling, or has failed. `run()` first starts the home-queue worker
 * (worker/plugin.ts), so for a moment the worker is still INITIALIZED, and `Worker.shutdown()` then throws; a
 * `shutdown()` in that moment would otherwise skip it and wait for a worker that never stops.
 */
async function untilStarted(worker: Worker, running: Promise<void>): Promise<void> {
  let settled = false;
  void running.then(
    () => (settled = true),
    () => (settled = true),
  );
  while (!settled && worker.getState() === 'INITIALIZED') await new Promise((r) => setTimeout(r, 10));
}

async function connectNative(resolved: ReturnType<typeof resolveConnection>): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect(connectOptions(resolved));
  } catch (err) {
    throw new Error(
      `Keel worker cannot connect to Temporal at ${describeConnection(resolved)}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}
