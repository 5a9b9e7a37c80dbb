import type { Duration } from '@temporalio/common';
import type { Static, TSchema } from 'typebox';
import type { ImageContent, TextContent, Usage } from '../../common/messages.js';

/** What a tool's `execute` returns (Pi's `AgentToolResult`). Plain JSON: it crosses the activity boundary. */
export interface AgentToolResult<TDetails = unknown> {
  content?: (TextContent | ImageContent)[];
  details?: TDetails;
  usage?: Usage;
  addedToolNames?: string[];
  /** Ask the loop not to call the model again after this batch (Pi's terminate rule: every result must ask). */
  terminate?: boolean;
  /** `true` makes this an error result (`isError: true`) without throwing, as in Pi 1.6.0. */
  isError?: boolean;
}

/** Progress callback. Each call becomes a `tool_execution_update` delivered through activity heartbeats. Calls after the tool settled are ignored. */
export type ToolUpdateCallback<TDetails = unknown> = (partial: AgentToolResult<TDetails>) => void;

/** Run information given to tools and hooks. Never the whole transcript. */
export interface ToolContext {
  workflowId: string;
  runId: string;
  /**
   * `<workflowId>/<toolCallId>`: identical on every attempt of this call; use it to make side effects idempotent. A call
   * reusing the id of an earlier call in the same message gets `<workflowId>/<toolCallId>#<position>`.
   */
  idempotencyKey: string;
  /** 1 on the first attempt. */
  attempt: number;
  /** The run's `metadata` labels. */
  metadata: Record<string, unknown>;
}

/** Subset of a Temporal retry policy, for idempotent tools. */
export interface ToolRetry {
  maximumAttempts?: number;
  initialInterval?: Duration;
  backoffCoefficient?: number;
  maximumInterval?: Duration;
}

/** A JSON Schema object (draft 2020-12 / draft-07 subset that ajv understands). */
export type JsonSchema = Record<string, unknown>;

/**
 * A tool's `parameters`: a TypeBox schema (`Type.Object({ path: Type.String() })`, a plain JSON Schema object at run
 * time) or a JSON Schema object written by hand. The model receives it as it is.
 */
export type ToolParameters = JsonSchema | (TSchema & object);

/** `parameters` as the JSON Schema object it is at run time (what the model and the validator receive). */
export function parametersSchema(parameters: ToolParameters): JsonSchema {
  return parameters as JsonSchema;
}

/**
 * The arguments `execute` receives for a `parameters` schema: TypeBox's `Static` of it — of a TypeBox schema, or of a
 * JSON Schema literal declared `as const` — and `Record<string, unknown>` when the schema's type says nothing (a
 * `JsonSchema` value).
 */
export type ToolArguments<P> = unknown extends Static<P & TSchema> ? Record<string, unknown> : Static<P & TSchema>;

/**
 * A tool the model can call. Registered on the worker (`createAgentWorker({ tools })`) and enabled per run by name.
 *
 * Contract (Pi's): `execute` **throws** to report failure; the thrown message becomes an `isError` tool result the model
 * reads. It never fails the activity. `signal` aborts when the run is interrupted or cancelled (activity cancellation).
 */
export interface ToolDefinition<TArgs = unknown, TDetails = unknown> {
  name: string;
  /** Human label for UIs. Defaults to `name`. */
  label?: string;
  description: string;
  /** JSON Schema of the arguments, sent to the model; a call's arguments are validated against it before `execute`. */
  parameters: ToolParameters;
  execute(
    toolCallId: string,
    args: TArgs,
    signal: AbortSignal,
    onUpdate: ToolUpdateCallback<TDetails>,
    context: ToolContext,
  ): Promise<AgentToolResult<TDetails>>;
  /** Compatibility shim run on the raw arguments before validation; returning a different object replaces them. Must be pure. */
  prepareArguments?(args: unknown): unknown;
  /** `sequential` makes the whole batch this call is in run sequentially. Default `parallel`. */
  executionMode?: 'sequential' | 'parallel';
  /**
   * True when running the tool twice with the same arguments is harmless. Only idempotent tools are retried by Temporal after
   * an infrastructure failure (worker lost, timeout); others run at most once. Default false.
   */
  idempotent?: boolean;
  /**
   * True when the tool uses the worker it runs on: its disk (files a later call reads), its processes or other local
   * state. A run's calls of such tools all go to one worker, the run's home (README "Worker affinity"); when the home
   * worker is gone, the run moves to another (an idempotent call is retried there, another gets the interrupted result).
   * Keel's built-in tools set it. Default false: the call goes to any worker of the run's task queue.
   */
  workerLocal?: boolean;
  /**
   * True lets the call run as a Temporal **local activity** (docs/local-tools.md): inside the workflow task, on the
   * worker that runs the workflow, recorded as one marker instead of an activity's scheduled/started/completed events,
   * so a call costs no round trip through the server. Only for cheap tools that are `idempotent` (a local activity
   * runs again on retry, and again when its workflow task fails before the marker is recorded); `defineTool` throws
   * otherwise. Limits: no heartbeats (no `onUpdate` progress, no heartbeat-based cancellation: an interrupt or cancel
   * takes effect after the call), a start-to-close timeout of `timeout` or 30 s, at most 1 minute with retries. A
   * `workerLocal` tool runs locally only when the workflow runs on the run's home worker, else as an activity there.
   * Default false: every call is a regular activity.
   */
  localActivity?: boolean;
  /** Start-to-close timeout of one execution (Temporal Duration: ms number or '10m'). Default 10 minutes. */
  timeout?: Duration;
  /** Retry policy for idempotent tools. */
  retry?: ToolRetry;
  /** Short text shown as the activity summary in the Temporal UI, e.g. `read src/app.ts`. Must not throw. */
  summary?(args: TArgs): string;
  /**
   * Whether a call waits for a person's `approve` / `deny` before it runs (README "Approvals"): `'never'` (default),
   * `'always'`, or a predicate on the validated arguments, run in the preparation activity (a throw becomes the call's
   * error result). The worker's `hooks.needsApproval` may override it.
   */
  approval?: ToolApproval<TArgs>;
}

/** The predicate is declared method-style (bivariant), as `execute` is, so typed tools still fit `ToolDefinition[]`. */
export type ToolApproval<TArgs = unknown> =
  'never' | 'always' | { predicate(args: TArgs, context: ToolContext): boolean | Promise<boolean> }['predicate'];

/**
 * Checks a tool definition and returns it unchanged, with `execute`'s arguments typed from `parameters`
 * ({@link ToolArguments}): `defineTool({ parameters: Type.Object({ path: Type.String() }), execute: async (id, args) =>
 * … })` gives `args: { path: string }`. An explicit argument type (`defineTool<MyArgs>({ … })`) is taken as given.
 * Throws a `TypeError` for a bad name (1-64 characters of `[A-Za-z0-9_-]`), a missing `execute`, a `parameters` that is
 * not an object, a bad `approval`, or `localActivity` without `idempotent`.
 */
export function defineTool<const P extends ToolParameters, TDetails = unknown>(
  tool: ToolDefinition<ToolArguments<P>, TDetails> & { parameters: P },
): ToolDefinition<ToolArguments<P>, TDetails>;
export function defineTool<TArgs, TDetails = unknown>(
  tool: ToolDefinition<TArgs, TDetails>,
): ToolDefinition<TArgs, TDetails>;
export function defineTool<TArgs, TDetails>(tool: ToolDefinition<TArgs, TDetails>): ToolDefinition<TArgs, TDetails> {
  if (!tool || typeof tool.name !== 'string' || !/^[A-Za-z0-9_-]{1,64}$/.test(tool.name)) {
    throw new TypeError(`defineTool: name must be 1-64 characters of [A-Za-z0-9_-], got ${JSON.stringify(tool?.name)}`);
  }
  if (typeof tool.execute !== 'function') throw new TypeError(`defineTool(${tool.name}): execute must be a function`);
  if (!tool.parameters || typeof tool.parameters !== 'object')
    throw new TypeError(`defineTool(${tool.name}): parameters must be a JSON Schema object`);
  if (tool.localActivity === true && tool.idempotent !== true)
    throw new TypeError(
      `defineTool(${tool.name}): localActivity requires idempotent: true (a local activity may run twice)`,
    );
  if (
    tool.approval !== undefined &&
    tool.approval !== 'never' &&
    tool.approval !== 'always' &&
    typeof tool.approval !== 'function'
  ) {
    throw new TypeError(
      `defineTool(${tool.name}): approval must be 'never', 'always' or a function (args, context) => boolean`,
    );
  }
  return tool;
}
