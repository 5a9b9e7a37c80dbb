import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import type { AgentHooks } from '../activities/hooks.js';
import type { ModelRegistry } from '../activities/model/provider.js';
import { scriptedModel } from '../activities/model/scripted.js';
import { piAiProvider } from '../activities/model/pi-ai.js';
import type { ToolDefinition } from '../activities/tools/define-tool.js';
import { queryTranscriptSource } from '../activities/transcript.js';
import { keelDataConverter, type PayloadStorageOption } from './payload-storage.js';
import { KEEL_SEARCH_ATTRIBUTE_KEYS } from '../common/search-attributes.js';

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
  /** A prebuilt workflow bundle (`bundleWorkflowCode`); default: bundle `workflows/` at start (a few seconds). */
  workflowBundle?: WorkerOptions['workflowBundle'];
  /** Passed to the Temporal worker; 0 makes every workflow task replay from history (determinism checks). */
  maxCachedWorkflows?: number;
  identity?: string;
  /**
   * Where payloads over 256 KiB go instead of history (README "Large transcripts"): default Keel's filesystem driver
   * under `.keel/payloads`; `{ driver }` for another (S3); `false` keeps everything inline (then a transcript over
   * 1.5 MB cannot be carried across continue-as-new). Clients reading these runs need the same setting.
   */
  payloadStorage?: PayloadStorageOption;
}

export interface AgentWorker {
  worker: Worker;
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

export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * A Temporal worker that runs `agentWorkflow` and Keel's activities with the given tools, model providers and hooks.
 * API keys are never passed here per run: providers read them from the worker's environment.
 */
export async function createAgentWorker(opts: AgentWorkerOptions = {}): Promise<AgentWorker> {
  const address = opts.address ?? process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const namespace = opts.namespace ?? 'default';
  const connection = opts.connection ?? (await NativeConnection.connect({ address }));
  const clientConnection = await Connection.connect({ address });
  const dataConverter = keelDataConverter(opts.payloadStorage);
  const client = new Client({ connection: clientConnection, namespace, dataConverter });
  const activities = createActivities({
    tools: opts.tools,
    models: opts.models ?? { scripted: scriptedModel(), '*': piAiProvider() },
    hooks: opts.hooks,
    transcript: queryTranscriptSource(client),
    largePayloads: dataConverter.externalStorage !== undefined,
    searchAttributesReady: searchAttributesProbe(client, namespace),
    requestCancel: async (workflowId, runId) => {
      await client.workflow.getHandle(workflowId, runId).cancel();
    },
  });
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue: opts.taskQueue ?? DEFAULT_TASK_QUEUE,
    activities,
    dataConverter,
    ...(opts.workflowBundle ? { workflowBundle: opts.workflowBundle } : { workflowsPath: WORKFLOWS_PATH }),
    ...(opts.maxCachedWorkflows !== undefined ? { maxCachedWorkflows: opts.maxCachedWorkflows } : {}),
    ...(opts.identity ? { identity: opts.identity } : {}),
    // Heartbeats carry cancellation back to activities and live progress out (≤ 4/s, keel.md §4.5).
    maxHeartbeatThrottleInterval: '250ms',
    defaultHeartbeatThrottleInterval: '250ms',
  });
  let running: Promise<void> | undefined;
  return {
    worker,
    client,
    run() {
      running ??= worker.run().finally(() => clientConnection.close());
      return running;
    },
    async shutdown() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
      if (!opts.connection) await connection.close();
    },
  };
}
