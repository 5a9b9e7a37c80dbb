import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import type { AgentHooks } from '../activities/hooks.js';
import type { ModelRegistry } from '../activities/model/provider.js';
import { scriptedModel } from '../activities/model/scripted.js';
import { piAiProvider } from '../activities/model/pi-ai.js';
import type { ToolDefinition } from '../activities/tools/define-tool.js';
import { queryTranscriptSource } from '../activities/transcript.js';
import { KEEL_SEARCH_ATTRIBUTE_KEYS } from '../common/search-attributes.js';
import { setCurrentVersion, workerDeploymentOptions, type DeploymentOptions } from './deployment.js';
import { workflowCode } from './workflow-code.js';

export const DEFAULT_TASK_QUEUE = 'keel';

export interface AgentWorkerOptions {
  /** Temporal frontend address; default `$TEMPORAL_ADDRESS` or `localhost:7233`. Activities' client connects here. */
  address?: string;
  connection?: NativeConnection;
  namespace?: string;
  /** Default `keel`. */
  taskQueue?: string;
  tools?: ToolDefinition[];
  /**
   * Model providers by prefix (`scripted`, `anthropic`, `*` for every other prefix). Default: `scripted` (JSON rule files)
   * and pi-ai for every provider it knows, with base URLs and API keys from the worker's environment.
   */
  models?: ModelRegistry;
  hooks?: AgentHooks;
  /** A prebuilt workflow bundle (`bundleWorkflowCode`); default: the package's prebuilt bundle, else `workflows/` bundled at start. */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Passed to the Temporal worker; 0 makes every workflow task replay from history (determinism checks). */
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
}

export interface AgentWorker {
  worker: Worker;
  /** The deployment version this worker serves; undefined for an unversioned worker. */
  version?: { deploymentName: string; buildId: string };
  /** Client used by the activities to read transcripts; closed by `shutdown`. */
  client: Client;
  /** Runs until `shutdown()`; rejects if the worker fails. */
  run(): Promise<void>;
  shutdown(): Promise<void>;
}

/** Checks (at most once a minute) that the namespace has Keel's search attributes; runs upsert them only then. */
function searchAttributesProbe(client: Client, namespace: string): () => Promise<boolean> {
  let cached: { at: number; ok: Promise<boolean> } | undefined;
  return () => {
    if (!cached || performance.now() - cached.at > 60_000) {
      const ok = client.connection.operatorService
        .listSearchAttributes({ namespace })
        .then((r) => KEEL_SEARCH_ATTRIBUTE_KEYS.every((k) => k.name in (r.customAttributes ?? {})))
        .catch(() => false);
      cached = { at: performance.now(), ok };
    }
    return cached.ok;
  };
}

export { WORKFLOWS_PATH } from './workflow-code.js';

/**
 * A Temporal worker that runs `agentWorkflow` and Keel's activities with the given tools, model providers and hooks.
 * API keys are never passed here per run: providers read them from the worker's environment.
 */
export async function createAgentWorker(opts: AgentWorkerOptions = {}): Promise<AgentWorker> {
  const address = opts.address ?? process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const namespace = opts.namespace ?? 'default';
  const connection = opts.connection ?? (await NativeConnection.connect({ address }));
  const clientConnection = await Connection.connect({ address });
  const client = new Client({ connection: clientConnection, namespace });
  const activities = createActivities({
    tools: opts.tools,
    models: opts.models ?? { scripted: scriptedModel(), '*': piAiProvider() },
    hooks: opts.hooks,
    transcript: queryTranscriptSource(client),
    searchAttributesReady: searchAttributesProbe(client, namespace),
    requestCancel: async (workflowId, runId) => {
      await client.workflow.getHandle(workflowId, runId).cancel();
    },
  });
  const deployment = opts.versioning === false ? undefined : workerDeploymentOptions({ ...opts.versioning, ...(opts.buildId ? { buildId: opts.buildId } : {}) });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue: opts.taskQueue ?? DEFAULT_TASK_QUEUE,
    activities,
    ...workflowCode(opts.workflowBundle),
    ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
    ...(opts.identity ? { identity: opts.identity } : {}),
    ...(deployment ? { workerDeploymentOptions: deployment } : {}),
    // Heartbeats carry cancellation back to activities and live progress out (≤ 4/s, docs/architecture.md#heartbeats).
    maxHeartbeatThrottleInterval: '250ms',
    defaultHeartbeatThrottleInterval: '250ms',
  });
  let running: Promise<void> | undefined;
  const makeCurrent = deployment !== undefined && opts.versioning !== false && (opts.versioning?.makeCurrent ?? true);
  return {
    worker,
    client,
    ...(deployment ? { version: { deploymentName: deployment.version.deploymentName, buildId: deployment.version.buildId } } : {}),
    run() {
      if (!running) {
        running = worker.run().finally(() => clientConnection.close());
        if (makeCurrent && deployment) {
          // the version exists once the worker has polled: retried until the server accepts it
          setCurrentVersion(client, namespace, deployment.version).catch((err) => process.stderr.write(`[keel] ${String(err)}\n`));
        }
      }
      return running;
    },
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      if (!opts.connection) await connection.close();
    },
  };
}
