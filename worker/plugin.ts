/**
 * Keel as a Temporal worker plugin: `Worker.create({ …, plugins: [keelPlugin({ tools, models, hooks })] })` adds
 * Keel's workflows (`agentWorkflow`, `agentBatchWorkflow`, …) and activities to any worker, next to the service's own
 * workflows and activities. Built on `@temporalio/plugin`'s `SimplePlugin`.
 *
 * Contract:
 * - activities: Keel's are appended to the worker's own (a name clash throws at `Worker.create`);
 * - workflows: with no `workflowsPath`/`workflowBundle`, the worker runs Keel's workflows; with a `workflowsPath`, the
 *   worker runs a generated module that re-exports both that module and Keel's; a prebuilt `workflowBundle` is left as
 *   is (its entry must then `export * from` Keel's `workflows/index.ts` itself);
 * - activities reach Temporal through the activity context's client (the worker's own connection): no second
 *   connection, the same TLS / API key as the worker;
 * - tools run through a worker-local ledger of finished outcomes (worker/tool-ledger.ts): a retried call that already
 *   finished here returns its recorded outcome and is not executed again;
 * - worker affinity: the worker also polls its own task queue (`<taskQueue>:home:<identity>:<8 hex>`, fixed for the
 *   worker's life) with the tool activities only; runs send their worker-local tools there (README "Worker
 *   affinity"). One `keelPlugin` instance per worker;
 * - roles (README "Worker roles"): `all` (default) also polls the tool queue `<taskQueue>-tools` with the tool
 *   activities; `model` runs the workflows, model and compaction calls and no tool (no home queue, no tool queue);
 *   `tools` polls `<taskQueue>-tools` (the worker's task queue is rewritten to it) and its home queue, with the tool
 *   activities only and no workflows;
 * - heartbeat throttling defaults to 250 ms (live progress, prompt cancellation) unless the worker sets it;
 * - an activity interceptor adds spans, metrics and log lines for model and tool calls (worker/activity-telemetry.ts);
 *   for tracing, put `tracingPlugin()` (worker/tracing.ts) before this plugin.
 */
import { createHash, randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import { SimplePlugin } from '@temporalio/plugin';
import {
  ApplicationFailure,
  type ExternalStorage,
  type LogMetadata,
  type Logger,
  type PayloadCodec,
} from '@temporalio/common';
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../activities/index.js';
import { closedChildren } from '../activities/batch-children.js';
import type { GraderDefinition } from '../activities/graders.js';
import type { AgentHooks } from '../activities/hooks.js';
import { piAiProvider } from '../activities/model/pi-ai.js';
import type { ModelRegistry } from '../activities/model/provider.js';
import { scriptedModel } from '../activities/model/scripted.js';
import type { ToolDefinition } from '../activities/tools/define-tool.js';
import { ownToolsWarning, type AgentDefinition } from '../activities/agents/define-agent.js';
import { queryTranscriptSource } from '../activities/transcript.js';
import { ErrorType } from '../common/errors.js';
import { keelSearchAttributesRegistered } from '../common/search-attributes.js';
import { type TOOL_QUEUE_ACTIVITIES, toolTaskQueue, WORKER_ROLES, type WorkerRole } from '../common/task-queues.js';
import { keelActivityTelemetry } from './activity-telemetry.js';
import { ToolLedger, withLedger } from './tool-ledger.js';
import { encrypts, withKeelCodec, type StoreRetry } from '../node-common/payload-storage.js';
import type { EncryptionOption } from '../node-common/encryption.js';
import { unsealedStartOfCurrentRun } from './sealed-start.js';
import { storeFinishedOutcomes } from './store-finished-outcome.js';
import { sealingFailures, WORKFLOWS_PATH } from './workflow-code.js';
import { resolveApprovals } from './approvals/resolve.js';
import type { ApprovalsOptions } from '../activities/approvals/verify-approval.js';
import { checkMcpServers, type McpServers } from '../activities/mcp/config.js';
import { McpToolSource } from '../activities/mcp/tool-source.js';
import { RunMcpTools } from '../activities/mcp/run-tools.js';
import { mcpToolsQuery, subAgentsQuery } from '../workflows/definitions.js';
import { RunSubAgents } from '../activities/agents/run-agents.js';
import type { ProviderLimits } from '../common/limits/definition.js';
import { defineProviderLimits } from './provider-limits.js';
import { resolveFleetStream, type FleetStreamOption } from '../node-common/fleet-stream/config.js';
import { FleetStreamStore } from '../node-common/fleet-stream/store.js';
import { streamRelaySinks } from './stream-relay-sinks.js';

export { WORKFLOWS_PATH };

export const KEEL_PLUGIN_NAME = 'keel';
// node_modules/@temporalio/workflow/package.json → node_modules/.cache/keel-workflows
const MERGED_DIR = join(
  dirname(createRequire(import.meta.url).resolve('@temporalio/workflow/package.json')),
  '..',
  '..',
  '.cache',
  'keel-workflows',
);

export interface KeelPluginOptions {
  tools?: ToolDefinition[];
  /**
   * Sub-agents (`defineAgent`, README "Sub-agents"): runs name them in `tools`; a call starts a child `agentWorkflow`.
   * Names share one namespace with `tools`.
   */
  agents?: AgentDefinition[];
  /** The deepest sub-agent a run may start (a child of the root has depth 1); a deeper call gets an error result. Default 3. */
  maxAgentDepth?: number;
  /**
   * Model providers by prefix (`scripted`, `anthropic`, `*` for every other prefix). Default: `scripted` (JSON rule files)
   * and pi-ai for every provider it knows, with base URLs and API keys from the worker's environment.
   */
  models?: ModelRegistry;
  hooks?: AgentHooks;
  /** Graders for graded batches (`defineGrader`), besides the built-ins (README "Graded batches"). */
  graders?: GraderDefinition[];
  /**
   * The worker's data converter offloads large payloads (`keelDataConverter()`, node-common/payload-storage.ts): runs may
   * then carry transcripts over 1.5 MB across continue-as-new. Default false.
   */
  largePayloads?: boolean;
  /** What this worker runs (README "Worker roles"): `model`, `tools`, or `all` (default). */
  role?: WorkerRole;
  /**
   * Backoff of a finished tool's outcome writes while the payload store fails (worker/store-finished-outcome.ts):
   * default 1 s doubling up to 30 s, retried until the store is back or the run is cancelled.
   */
  storeRetry?: StoreRetry;
  /**
   * Payload encryption (README "Encryption"), added last to the worker's `dataConverter.payloadCodecs` (the worker's
   * own converter is kept). Default: the key ring the environment names (`$KEEL_ENCRYPTION_KEYS`,
   * `$KEEL_ENCRYPTION_KEYS_FILE`); `false`: off. A converter that has Keel's codec already (`createAgentWorker`'s) is
   * left as it is. An encrypting worker fails a run started without encryption at its start.
   */
  encryption?: EncryptionOption;
  /**
   * Who may approve tool calls (README "Who may approve"): `{ authentication: { jwks | jwksUrl | hmacSecret |
   * hmacSecretFile, issuer?, audience? }, authorizeApproval? }` accepts only decisions with a token this worker
   * verifies; `{ authentication: 'none' }` accepts any approver name (development only; printed at worker start).
   * Required when a tool or `hooks.needsApproval` can ask for approval: without it the plugin throws.
   */
  approvals?: ApprovalsOptions;
  /**
   * MCP servers whose tools runs may name as `<server>__<tool>` (README "MCP servers", docs/tools.md): stdio
   * `{ command, args?, env?, cwd?, sandbox?, network?, readOnlyPaths?, writablePaths? }` (run in the tool sandbox unless
   * `sandbox: false`; the worker refuses to start where bubblewrap cannot run) or Streamable HTTP `{ url, headers? }`,
   * with optional per-tool overrides. One client per server, connected on first use, reconnected after a failure,
   * closed when the worker stops.
   */
  mcpServers?: McpServers;
  /**
   * Provider limits shared by every run of the namespace (docs/provider-limits.md): by provider prefix or model pattern,
   * `{ requestsPerMinute, inputTokensPerMinute, outputTokensPerMinute, concurrentRequests }`. Every model request of a
   * run on this worker then asks the key's limiter workflow for room first. Every worker of the namespace must give
   * the same limits: one with a different definition refuses to start (saying which), and in flight the limiter's
   * definition is enforced. Default: none (model requests ask no one).
   */
  providerLimits?: ProviderLimits;
  /**
   * The fleet stream transport (docs/live-output.md#fleet-transport): `{ redis: url }` appends the model's deltas to a
   * Redis or Valkey stream as well, so readers configured alike block on it instead of polling Temporal. Default: the
   * URL in `$KEEL_STREAM_REDIS_URL`, else none (deltas travel in heartbeats only); `false`: none.
   */
  stream?: FleetStreamOption | false;
}

/** The activities of a `tools` worker, and of the tool queue of an `all` worker. */
type ToolActivities = Pick<ReturnType<typeof createActivities>, (typeof TOOL_QUEUE_ACTIVITIES)[number]>;

/**
 * A `model` worker's stand-ins for the tool activities (it runs none). As a local activity (a run carrying local tool
 * calls from an `all` worker): refused as not home, so the workflow schedules the call on the tool queue. As an
 * activity placed on the run's task queue by a run an `all` worker started (`onRunQueue`, from 0.8.0): refused the
 * same way, the run places it on its tool queue. As another activity on the run's task queue (a run recorded before
 * 0.4.2): an error saying what the operator must do.
 */
function refusedToolActivity(input?: { onRunQueue?: boolean }): never {
  const info = Context.current().info;
  if (info.isLocal)
    throw ApplicationFailure.nonRetryable(
      'Tool call refused as a local activity: this worker has role "model" and runs no tools',
      ErrorType.NotHome,
    );
  if (input?.onRunQueue === true)
    throw ApplicationFailure.nonRetryable(
      'Tool call refused on the run\'s task queue: this worker has role "model" and runs no tools',
      ErrorType.NotHome,
    );
  throw new Error(
    `This worker has role "model" and runs no tools; this run schedules its tools on ${info.taskQueue}, as runs started before 0.4.2 do. Keep a worker with role "all" on task queue ${info.taskQueue} until such runs have finished.`,
  );
}

/** The activity context's client: the worker's own connection, bound to the activity's namespace. */
const activityClient = (): Client => Context.current().client;

/** Checks (at most once a minute) that the namespace has Keel's search attributes; runs upsert them only then. */
function searchAttributesProbe(): () => Promise<boolean> {
  let cached: { at: number; ok: Promise<boolean> } | undefined;
  return () => {
    if (!cached || performance.now() - cached.at > 60_000) {
      const ok = keelSearchAttributesRegistered(activityClient().connection, Context.current().info.workflowNamespace);
      cached = { at: performance.now(), ok };
    }
    return cached.ok;
  };
}

/**
 * A module that re-exports the service's workflows and Keel's, so one worker runs both. It lives in
 * `node_modules/.cache/keel-workflows/` (where the bundler's entrypoint next to it resolves `@temporalio/workflow`),
 * named by a hash of the service's path; `withKeelWorkflows` of its own result returns it unchanged.
 */
function withKeelWorkflows(workflowsPath: string): string {
  const own = resolve(workflowsPath);
  if (own === WORKFLOWS_PATH || own.startsWith(MERGED_DIR)) return own;
  const dir = join(MERGED_DIR, createHash('sha256').update(own).digest('hex').slice(0, 16));
  mkdirSync(dir, { recursive: true });
  const path = join(dir, 'index.js');
  writeFileSync(path, `export * from ${JSON.stringify(own)};\nexport * from ${JSON.stringify(WORKFLOWS_PATH)};\n`);
  return path;
}

/** The name of a worker's own task queue: readable (queue and identity), unique (several workers may share an identity). */
export function homeQueueName(taskQueue: string, identity: string): string {
  return `${taskQueue}:home:${identity}:${randomBytes(4).toString('hex')}`;
}

/**
 * The home worker registers no workflows on purpose; the SDK warns about that on every start ("No workflows
 * registered, not polling for workflow tasks"). Its logger is the runtime's (not settable per worker), so this one
 * message is dropped on that worker's logger only.
 */
function quietNoWorkflows(worker: Worker): void {
  const holder = worker as unknown as { logger?: Logger };
  const inner = holder.logger;
  if (!inner || typeof inner.warn !== 'function') return;
  holder.logger = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop !== 'warn') return Reflect.get(target, prop, receiver) as unknown;
      return (message: string, meta?: LogMetadata) =>
        message.startsWith('No workflows registered') ? undefined : target.warn(message, meta);
    },
  });
}

export class KeelPlugin extends SimplePlugin {
  readonly role: WorkerRole;
  private readonly toolActivities: ToolActivities;
  /** Options of the worker that polls the home queue, from the worker this plugin configured. */
  private home?: { queue: string; options: WorkerOptions };
  /** The tool queue an `all` worker polls besides its task queue. */
  private toolQueue?: string;
  /** Set while the home queue is polled. */
  private homeRunning = false;
  /** The worker's payload store (its data converter's external storage), once configured. */
  private storage?: ExternalStorage;
  /** The worker's converter seals payloads (Keel's EncryptionCodec): runs must start sealed. */
  private encrypting = false;
  /** `maxCachedWorkflows: 0`: the worker runs no local activity (core drops one in flight at each eviction). */
  private cachesNothing = false;
  /** The worker's payload codecs (the caller's, then Keel's), once configured. */
  private codecs: PayloadCodec[] = [];
  private readonly encryption?: EncryptionOption;
  /** Printed when the worker starts: approvals are not authenticated (`authentication: 'none'`). */
  private readonly approvalsNotice?: string;
  /**
  /** The MCP servers' tools, when the worker has servers; their clients are closed when the worker stops. */
  readonly mcp?: RunMcpTools;
  /** The worker's provider limits, defined with the namespace's limiters when it starts. */
  private readonly providerLimits?: ProviderLimits;
  /** The fleet stream transport's store, when configured: connected while the worker runs. */
  readonly fleet?: FleetStreamStore;

  constructor(opts: KeelPluginOptions = {}) {
    const role = opts.role ?? 'all';
    if (!WORKER_ROLES.includes(role))
      throw new TypeError(`role must be one of ${WORKER_ROLES.join(', ')}, got ${JSON.stringify(role)}`);
    let self: KeelPlugin | undefined;
    const approvals = resolveApprovals({ approvals: opts.approvals, tools: opts.tools, hooks: opts.hooks, role });
    const ledger = new ToolLedger();
    const mcpServers = opts.mcpServers && checkMcpServers(opts.mcpServers);
    const ownTools = ownToolsWarning(opts.agents);
    if (ownTools) process.stderr.write(ownTools); // an opt-out of the tree's tool bound, announced
    const mcp =
      mcpServers && Object.keys(mcpServers).length > 0
        ? new RunMcpTools(new McpToolSource(mcpServers, (t) => withLedger([t], ledger)[0]), (workflowId) =>
            activityClient().workflow.getHandle(workflowId).query(mcpToolsQuery),
          )
        : undefined;
    const fleetOption = resolveFleetStream(opts.stream); // a tools worker appends its tools' updates
    const fleet = fleetOption && new FleetStreamStore(fleetOption, () => self?.codecs ?? []);
    const all = createActivities({
      ...(fleet ? { fleet } : {}),
      approvals,
      tools: withLedger(opts.tools ?? [], ledger),
      ...(opts.agents ? { agents: opts.agents } : {}),
      recordedAgents: new RunSubAgents((workflowId) =>
        activityClient().workflow.getHandle(workflowId).query(subAgentsQuery),
      ),
      ...(opts.maxAgentDepth !== undefined ? { maxAgentDepth: opts.maxAgentDepth } : {}),
      ...(mcp ? { mcp } : {}),
      models: opts.models ?? { scripted: scriptedModel(), '*': piAiProvider() },
      hooks: opts.hooks,
      largePayloads: opts.largePayloads === true,
      transcript: {
        read: (workflowId, from, limit) => queryTranscriptSource(activityClient()).read(workflowId, from, limit),
      },
      searchAttributesReady: searchAttributesProbe(),
      requestCancel: async (workflowId, runId) => {
        await activityClient().workflow.getHandle(workflowId, runId).cancel();
      },
      homeQueue: () => (self?.homeRunning ? self.home?.queue : undefined),
      closedChildren: (workflowIds) => closedChildren(activityClient(), workflowIds),
      graders: opts.graders,
      client: activityClient,
      toolsElsewhere: role === 'model',
      noLocalActivities: () => self?.cachesNothing === true,
      unsealedStart: async () => (self?.encrypting ? unsealedStartOfCurrentRun(self.storage) : undefined),
      ...(opts.providerLimits ? { providerLimits: opts.providerLimits } : {}),
    });
    const toolActivities: ToolActivities = {
      prepareToolCalls: all.prepareToolCalls,
      executeToolCall: all.executeToolCall,
      runToolCall: all.runToolCall,
      workerHome: all.workerHome,
    };
    const activities =
      role === 'all'
        ? all
        : role === 'tools'
          ? toolActivities
          : {
              ...all,
              prepareToolCalls: refusedToolActivity,
              executeToolCall: refusedToolActivity,
              runToolCall: refusedToolActivity,
            };
    super({
      name: KEEL_PLUGIN_NAME,
      activities,
      // spans, metrics and log lines of model and tool calls (worker/activity-telemetry.ts)
      // spans, metrics and log lines of model and tool calls (worker/activity-telemetry.ts); a finished tool's outcome
      // is written to the payload store before the attempt completes, retried while the store fails
      // (worker/store-finished-outcome.ts)
      workerInterceptors: {
        activity: [
          keelActivityTelemetry,
          storeFinishedOutcomes(
            () => self?.storage,
            opts.storeRetry,
            () => self?.codecs ?? [],
          ),
        ],
      },
      ...(role === 'tools'
        ? {}
        : {
            workflowsPath: (existing: string | undefined) =>
              existing === undefined ? WORKFLOWS_PATH : withKeelWorkflows(existing),
          }),
    });
    self = this;
    this.providerLimits =
      opts.providerLimits && Object.keys(opts.providerLimits).length ? opts.providerLimits : undefined;
    this.mcp = mcp;
    this.fleet = fleet;
    this.role = role;
    this.encryption = opts.encryption;
    this.approvalsNotice = approvals.notice;
    this.toolActivities = toolActivities;
  }

  /** The task queue only this worker polls (worker affinity); undefined until the worker runs. */
  get homeQueue(): string | undefined {
    return this.homeRunning ? this.home?.queue : undefined;
  }

  /**
   * Runs the home-queue worker (tool activities only, same connection, converter and interceptors) beside the worker,
   * and for role `all` the tool-queue worker likewise; a `model` worker runs neither.
   */
  override async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    if (this.approvalsNotice) process.stderr.write(this.approvalsNotice);
    const limits: { refusal?: Error } = {};
    const stopped = new AbortController();
    void this.checkLimits(worker, stopped.signal).then((refusal) => (limits.refusal = refusal));
    this.fleet?.open();
    try {
      await this.runWorkers(worker, next);
      if (limits.refusal) throw limits.refusal;
    } finally {
      stopped.abort();
      this.fleet?.close();
      await this.mcp?.source.close();
    }
  }

  /**
   * The worker's provider limits defined with the namespace's limiters while it starts (worker/provider-limits.ts):
   * refused, the worker shuts down and `run()` rejects with the refusal (resolves with it; undefined when defined). A
   * limiter that cannot answer yet is asked again while the worker runs (`stopped` ends that): it never stops the worker.
   */
  private checkLimits(worker: Worker, stopped: AbortSignal): Promise<Error | undefined> {
    const options = this.home?.options;
    if (!this.providerLimits || this.role === 'tools' || !options) return Promise.resolve(undefined);
    const warn = (message: string) => process.stderr.write(`${message}\n`);
    return defineProviderLimits(options, this.providerLimits, { signal: stopped, warn }).then(
      () => undefined,
      (err: unknown) => {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        return err instanceof Error ? err : new Error(String(err));
      },
    );
  }

  private async runWorkers(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    if (!this.home || this.role === 'model') return super.runWorker(worker, next);
    const { options } = this.home;
    const queues = [this.home.queue, ...(this.toolQueue ? [this.toolQueue] : [])];
    const sides = await Promise.all(queues.map((queue) => this.sideWorker(queue, options)));
    for (const side of sides) quietNoWorkflows(side);
    if (this.role === 'tools') quietNoWorkflows(worker);
    const runs = sides.map((side) => side.run());
    this.homeRunning = true;
    // a side worker failing stops the worker too: a worker whose home queue nobody polls would keep taking runs
    for (const run of runs) run.catch(() => worker.getState() === 'RUNNING' && worker.shutdown());
    try {
      await super.runWorker(worker, next);
    } finally {
      this.homeRunning = false;
      for (const side of sides) if (side.getState() === 'RUNNING') side.shutdown();
      await Promise.allSettled(runs);
    }
  }

  /** A worker polling `queue` with the tool activities only (same connection, converter and interceptors); unversioned. */
  private sideWorker(queue: string, options: WorkerOptions): Promise<Worker> {
    return Worker.create({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: queue,
      identity: options.identity,
      activities: this.toolActivities,
      dataConverter: options.dataConverter,
      interceptors: { activity: options.interceptors?.activity ?? [] },
      maxHeartbeatThrottleInterval: options.maxHeartbeatThrottleInterval,
      defaultHeartbeatThrottleInterval: options.defaultHeartbeatThrottleInterval,
      ...(options.maxConcurrentActivityTaskExecutions !== undefined
        ? { maxConcurrentActivityTaskExecutions: options.maxConcurrentActivityTaskExecutions }
        : {}),
      ...(options.shutdownGraceTime !== undefined ? { shutdownGraceTime: options.shutdownGraceTime } : {}),
    });
  }

  override configureWorker(options: WorkerOptions): WorkerOptions {
    const configured = super.configureWorker(options);
    const result: WorkerOptions = {
      ...configured,
      // the worker's converter kept, Keel's codec (encryption, or the refusal of sealed payloads without keys) last
      // and with encryption on, the failure converter that seals messages and stack traces (unless the worker has its own)
      dataConverter: sealingFailures(withKeelCodec(configured.dataConverter ?? {}, this.encryption)),
      // the stream relay's sink (a workflow calls it whatever the worker's transport; a no-op without a store)
      sinks: { ...configured.sinks, ...streamRelaySinks(this.fleet) },
      // a prebuilt bundle wins: SimplePlugin would otherwise add Keel's workflowsPath next to it
      ...(options.workflowBundle ? { workflowsPath: undefined } : {}),
      // Heartbeats carry cancellation back to activities and live progress out (docs/architecture.md#heartbeats): Keel
      // spaces them itself (a tool's ≤ 4/s, a streaming model call's ≤ 20/s: the live deltas), so the SDK's throttle
      // only has to let that through. Below Keel's 50 ms: at 50 ms a heartbeat that came a hair early waited another
      // interval (token → server p50 62 → 36 ms in bench section 10).
      maxHeartbeatThrottleInterval: options.maxHeartbeatThrottleInterval ?? '20ms',
      defaultHeartbeatThrottleInterval: options.defaultHeartbeatThrottleInterval ?? '20ms',
    };
    this.storage = result.dataConverter?.externalStorage;
    this.encrypting = encrypts(result.dataConverter);
    this.cachesNothing = result.maxCachedWorkflows === 0;
    this.codecs = result.dataConverter?.payloadCodecs ?? [];
    const identity = options.identity ?? `${process.pid}@${hostname()}`;
    this.home = { queue: homeQueueName(options.taskQueue, identity), options: { ...result, identity } };
    if (this.role === 'all') this.toolQueue = toolTaskQueue(options.taskQueue);
    // a tools worker polls the tool queue of its task queue (and its home queue), nothing else
    if (this.role === 'tools') return { ...result, taskQueue: toolTaskQueue(options.taskQueue) };
    return result;
  }
}

/** Keel's workflows and activities as a worker plugin (see KeelPlugin). */
export function keelPlugin(opts: KeelPluginOptions = {}): KeelPlugin {
  return new KeelPlugin(opts);
}
