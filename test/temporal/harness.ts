/** Test helpers: a Keel worker per test (own task queue, scripted model, inline tools) on the shared dev server. */
import type { ProviderLimits } from '../../common/limits/definition.js';
import type { GraderDefinition } from '../../activities/graders.js';
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import type { WorkflowHandle } from '@temporalio/client';
import { Runtime, DefaultLogger } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { AgentClient, UpdateRejectedError, type AgentRunHandle } from '../../client/agent-client.js';
import { createAgentWorker, type AgentWorker, type PassThroughWorkerOptions } from '../../worker/create-worker.js';
import { approvalAskers } from '../../worker/approvals/resolve.js';
import { SEALED_FAILURES_PATH, WORKFLOWS_PATH } from '../../worker/workflow-code.js';
import { cachedWorkflowBundle } from '../../worker/bundle-cache.js';
import type { ApprovalsOptions } from '../../activities/approvals/verify-approval.js';
import { scriptedModel, type Script } from '../../activities/model/scripted.js';
import type { AgentHooks } from '../../activities/hooks.js';
import type { ModelProvider, ModelRegistry, ModelRequest } from '../../activities/model/provider.js';
import type { ToolDefinition } from '../../activities/tools/define-tool.js';
import type { AgentDefinition } from '../../activities/agents/define-agent.js';
import type { LoggedEvent } from '../../common/events.js';
import type { Message } from '../../common/messages.js';
import type { AgentRunInput } from '../../common/run.js';
import type { PayloadStorageOption } from '../../node-common/payload-storage.js';
import type { EncryptionOption } from '../../node-common/encryption.js';
import { wakeSignal } from '../../workflows/definitions.js';
import type { McpServers } from '../../activities/mcp/config.js';

let runtimeInstalled = false;
let sealed: Promise<{ code: string }> | undefined;

/**
 * The workflow bundle of an encrypting worker (worker/workflow-code.ts `sealingFailures`), read once per test file
 * from the on-disk bundle cache (worker/bundle-cache.ts: built by the first file that asks, or by a worker started
 * earlier; built again when an input changed).
 */
function sealedBundle(): Promise<{ code: string }> {
  sealed ??= cachedWorkflowBundle(
    { workflowsPath: WORKFLOWS_PATH, failureConverterPath: SEALED_FAILURES_PATH },
    new DefaultLogger('WARN'),
  );
  return sealed;
}
export function quietRuntime() {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // already installed by another file in this worker thread
  }
}

export interface Keel {
  client: AgentClient;
  worker: AgentWorker;
  taskQueue: string;
  address: string;
  /** Start a run on this worker's task queue. */
  start(input: AgentRunInput, workflowId?: string): Promise<AgentRunHandle>;
  stop(): Promise<void>;
}

export async function startKeel(
  opts: {
    scripts?: Record<string, Script>;
    tools?: ToolDefinition[];
    /** Sub-agents (`defineAgent`) and the worker's depth limit. */
    agents?: AgentDefinition[];
    maxAgentDepth?: number;
    models?: ModelRegistry;
    hooks?: AgentHooks;
    graders?: GraderDefinition[];
    maxCachedWorkflows?: number;
    taskQueue?: string;
    workerOptions?: PassThroughWorkerOptions;
    /** Default Keel's filesystem driver (node-common/payload-storage.ts); `false`: every payload inline. */
    payloadStorage?: PayloadStorageOption;
    /** Payload encryption of the worker and the client (default: the environment's, i.e. none in tests). */
    encryption?: EncryptionOption;
    /** Default: `{ authentication: 'none' }` when a tool or hook can ask for approval (the tests of free-text approvers). */
    approvals?: ApprovalsOptions;
    mcpServers?: McpServers;
    providerLimits?: ProviderLimits;
  } = {},
): Promise<Keel> {
  quietRuntime();
  const address = inject('temporalAddress');
  const taskQueue = opts.taskQueue ?? `test-${randomUUID()}`;
  const worker = await createAgentWorker({
    address,
    taskQueue,
    tools: opts.tools,
    ...(opts.agents ? { agents: opts.agents } : {}),
    ...(opts.maxAgentDepth !== undefined ? { maxAgentDepth: opts.maxAgentDepth } : {}),
    models: opts.models ?? { scripted: scriptedModel(opts.scripts ?? {}) },
    hooks: opts.hooks,
    ...(opts.graders ? { graders: opts.graders } : {}),
    // an encrypting worker's workflows seal their failures: the bundle built with that failure converter
    workflowBundle: opts.encryption ? await sealedBundle() : { codePath: inject('workflowBundlePath') },
    maxCachedWorkflows: opts.maxCachedWorkflows,
    workerOptions: opts.workerOptions,
    payloadStorage: opts.payloadStorage,
    encryption: opts.encryption,
    approvals:
      opts.approvals ??
      (approvalAskers(opts.tools, opts.hooks).length > 0 ? { authentication: 'none' as const } : undefined),
    ...(opts.mcpServers ? { mcpServers: opts.mcpServers } : {}),
    ...(opts.providerLimits ? { providerLimits: opts.providerLimits } : {}),
  });
  const running = worker.run();
  running.catch(() => {});
  await worker.ready(); // the task queue routes to this build before any test starts a run
  const client = await AgentClient.connect({
    address,
    taskQueue,
    payloadStorage: opts.payloadStorage,
    encryption: opts.encryption,
  });
  return {
    client,
    worker,
    taskQueue,
    address,
    start: (input, workflowId) => client.start(input, { workflowId: workflowId ?? `test-${randomUUID()}` }),
    async stop() {
      await worker.shutdown();
      await client.close();
    },
  };
}

/** A message without its volatile fields (timestamp, usage, provider identity), for whole-transcript assertions. */
export function strip(messages: Message[]): unknown[] {
  return messages.map((m) => {
    const { timestamp: _t, ...rest } = m as Message & Record<string, unknown>;
    if (m.role === 'assistant') {
      const { usage: _u, api: _a, provider: _p, model: _m, ...a } = rest as Record<string, unknown>;
      return a;
    }
    return rest;
  });
}

/**
 * Events in a compact notation: AS agent_start, TS turn_start, MS(role[:toolCallId]) message_start, TES(id) / TEE(id)
 * tool_execution_start / _end, TE(n results) turn_end, AE agent_end.
 */
export function notation(events: LoggedEvent[]): string[] {
  return events.map((e) => {
    switch (e.type) {
      case 'agent_start':
        return 'AS';
      case 'agent_end':
        return 'AE';
      case 'turn_start':
        return 'TS';
      case 'turn_end':
        return `TE(${e.toolResults.map((r) => r.toolCallId).join(',')})`;
      case 'message_start':
      case 'message_end':
        return `${e.type === 'message_start' ? 'MS' : 'ME'}(${label(e.message)})`;
      case 'tool_execution_start':
        return `TES(${e.toolCallId})`;
      case 'tool_execution_end':
        return `TEE(${e.toolCallId})`;
      default:
        return e.type;
    }
  });
}

function label(m: Message): string {
  if (m.role === 'toolResult') return `tr:${m.toolCallId}`;
  if (m.role === 'user')
    return `u:${typeof m.content === 'string' ? m.content : m.content.map((b) => (b.type === 'text' ? b.text : '[image]')).join('')}`;
  return 'a';
}

/** The event types of a run that answers its prompt with one reply and ends, in order. */
export const ONE_REPLY_EVENT_TYPES = [
  'agent_start',
  'turn_start',
  'message_start',
  'message_end',
  'message_start',
  'message_end',
  'turn_end',
  'agent_end',
] as const;

/** All events of a run, read through the `events` query. */
export async function allEvents(handle: AgentRunHandle): Promise<LoggedEvent[]> {
  const out: LoggedEvent[] = [];
  for (;;) {
    const page = await handle.events({ after: out.length ? out[out.length - 1].seq : 0 });
    if (page.events.length === 0) return out;
    out.push(...page.events);
  }
}

/** A promise you release from the test: makes overlap observable without sleeps. */
export function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((r) => (open = r));
  return { promise, open };
}

/**
 * Polls `fn` until it returns true (for waiting on a worker-side condition). Mind the interval when `fn` queries a
 * workflow on a worker without a cache: each query then replays the whole history.
 */
export async function until(
  fn: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  what = 'condition',
  intervalMs = 25,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      if (await fn()) return;
    } catch (err) {
      lastError = err; // a query that timed out on a busy machine means "not yet"
    }
    if (Date.now() > deadline)
      throw new Error(`timed out waiting for ${what}${lastError ? ` (last error: ${String(lastError)})` : ''}`);
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** Waits until a model call of the run is streaming: an activity has sent a heartbeat (the partial reply). */
export async function untilStreaming(h: AgentRunHandle, timeoutMs = 20_000): Promise<void> {
  await until(
    async () =>
      (await h.workflow.describe()).raw.pendingActivities?.some((a) => a.heartbeatDetails?.payloads?.length) ?? false,
    timeoutMs,
    'streaming',
  );
}

/**
 * Waits until the run has continued-as-new `n` times, sending `wake` meanwhile. A workflow task's history size can
 * leave out events written together with the task's start (a signal that arrived just as it started), so a run whose
 * continue-as-new became due that way, and that then only waits (an approval), sees it at its next task: a `wake`.
 */
export async function untilContinuedAsNew(h: AgentRunHandle, n = 1, timeoutMs = 20_000): Promise<void> {
  await until(
    async () => {
      if ((await h.state()).continuedAsNew >= n) return true;
      await h.workflow.signal(wakeSignal);
      return false;
    },
    timeoutMs,
    `continue-as-new ${n}`,
    250,
  );
}

// ---------------------------------------------------------------------------------------------------------------------
// Helpers for the loop conformance suites (loop-*.test.ts).

/** A model provider that records every request (deep copies) per model id and can hold one model's calls until released. */
export interface RecordingModel extends ModelProvider {
  /** The requests seen for `modelId` (the part after `provider/`), oldest first. */
  requests(modelId: string): ModelRequest[];
  /** Holds every call of `modelId` until `open()`; `reached` resolves when the first held call arrived. */
  hold(modelId: string): { open(): void; reached: Promise<void> };
}

export function recordingModel(inner: ModelProvider): RecordingModel {
  const seen = new Map<string, ModelRequest[]>();
  const holds = new Map<string, { promise: Promise<void>; reached(): void }>();
  return {
    checkModel: (modelId) => inner.checkModel?.(modelId),
    async stream(request, signal, onPartial) {
      const list = seen.get(request.modelId) ?? [];
      list.push(structuredClone(request));
      seen.set(request.modelId, list);
      const held = holds.get(request.modelId);
      if (held) {
        held.reached();
        await held.promise;
      }
      return inner.stream(request, signal, onPartial);
    },
    requests: (modelId) => seen.get(modelId) ?? [],
    hold(modelId) {
      const release = gate();
      const reached = gate();
      holds.set(modelId, { promise: release.promise, reached: reached.open });
      return {
        open() {
          holds.delete(modelId);
          release.open();
        },
        reached: reached.promise,
      };
    },
  };
}

/** Worker hooks that dispatch to per-workflow hooks, so many runs with different hooks can share one worker. */
export function hookRouter(): { hooks: AgentHooks; route(workflowId: string, hooks: AgentHooks): void } {
  const routes = new Map<string, AgentHooks>();
  return {
    route(workflowId, hooks) {
      routes.set(workflowId, hooks);
    },
    hooks: {
      beforeToolCall: (ctx, signal) => routes.get(ctx.context.workflowId)?.beforeToolCall?.(ctx, signal),
      afterToolCall: (ctx, signal) => routes.get(ctx.context.workflowId)?.afterToolCall?.(ctx, signal),
      transformContext: (messages, signal, info) =>
        routes.get(info.workflowId)?.transformContext?.(messages, signal, info) ?? messages,
    },
  };
}

/** Every payload of a fetched history decoded to text, for "this never entered history" assertions. */
export function historyText(history: unknown): string {
  const out: string[] = [];
  const walk = (v: unknown): void => {
    if (v instanceof Uint8Array) out.push(Buffer.from(v).toString('utf8'));
    else if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') Object.values(v).forEach(walk);
    else if (typeof v === 'string') out.push(v);
  };
  walk(history);
  return out.join('\n');
}

/** The histories of every run of a workflow id's continue-as-new chain, oldest first. */
export async function chainHistories(
  handle: WorkflowHandle,
): Promise<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>[]> {
  const latest = await handle.describe(); // the latest run; walk the chain from its first execution
  let runId: string | undefined | null = latest.raw.workflowExecutionInfo?.firstRunId ?? latest.runId;
  const out: Awaited<ReturnType<WorkflowHandle['fetchHistory']>>[] = [];
  while (runId) {
    const history = await handle.client.getHandle(handle.workflowId, runId).fetchHistory();
    out.push(history);
    runId =
      history.events?.[history.events.length - 1]?.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId;
  }
  return out;
}

/**
 * Every `WorkflowTaskFailed` in the runs of a workflow id's continue-as-new chain, as `cause: message` (want: none).
 * Takes a Keel run handle or a plain Temporal workflow handle.
 */
export async function workflowTaskFailures(run: AgentRunHandle | WorkflowHandle): Promise<string[]> {
  const { EventType, WorkflowTaskFailedCause } = temporal.api.enums.v1;
  const failures: string[] = [];
  for (const history of await chainHistories('workflow' in run ? run.workflow : run)) {
    for (const e of history.events ?? []) {
      const a = e.workflowTaskFailedEventAttributes;
      if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED)
        failures.push(
          `${WorkflowTaskFailedCause[Number(a?.cause)] ?? String(a?.cause)}: ${a?.failure?.message ?? '(no message)'}`,
        );
    }
  }
  return failures;
}

/**
 * How many Updates named `name` the run's current execution has accepted (its `WorkflowExecutionUpdateAccepted`
 * events). A probe that changes nothing: once an Update is accepted its handler has run up to its first await.
 */
export async function acceptedUpdates(run: AgentRunHandle, name: string): Promise<number> {
  const { EventType } = temporal.api.enums.v1;
  const history = await run.workflow.client.getHandle(run.workflowId).fetchHistory();
  return (history.events ?? []).filter(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED &&
      e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === name,
  ).length;
}

/** The message of an Update refused by its validator (fails the test when the Update was accepted). */
export async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof UpdateRejectedError))
    throw new Error(`expected the Update to be refused, got ${err === undefined ? 'an acknowledgement' : String(err)}`);
  return err.message;
}

type FetchedEvent = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>[number];

/**
 * A history event as the tests name it: its type without `EVENT_TYPE_`, then what it is about — an activity's type, a
 * patch marker's id, a local activity's type (`local <type>`), `TemporalChangeVersion` or `Keel` for an upsert.
 */
export function eventName(e: FetchedEvent): string {
  const type = String(temporal.api.enums.v1.EventType[e.eventType ?? 0]).replace('EVENT_TYPE_', '');
  const details = e.markerRecordedEventAttributes?.details;
  const patch = details?.['patch-data']?.payloads?.[0]?.data;
  const local = details?.data?.payloads?.[0]?.data;
  const upsert = e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields;
  const what =
    e.activityTaskScheduledEventAttributes?.activityType?.name ??
    (patch ? (JSON.parse(Buffer.from(patch).toString()) as { id: string }).id : undefined) ??
    (local
      ? `local ${(JSON.parse(Buffer.from(local).toString()) as { activity_type: string }).activity_type}`
      : undefined) ??
    (upsert?.TemporalChangeVersion ? 'TemporalChangeVersion' : upsert ? 'Keel' : undefined);
  return what ? `${type} ${what}` : type;
}
