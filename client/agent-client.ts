import {
  Client,
  Connection,
  type ScheduleHandle,
  WithStartWorkflowOperation,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
  type WorkflowHandle,
} from '@temporalio/client';
import type { UpdateDefinition } from '@temporalio/common';
import { ApplicationFailure } from '@temporalio/common';
import { connectOptions, resolveConnection, type ConnectionSettings } from '../node-common/connection.js';
import { clientInterceptors } from '../node-common/closed-channel-guard.js';
import { ErrorType } from '../common/errors.js';
import type { EventsPage } from '../common/events.js';
import type { Message } from '../common/messages.js';
import type { Static, TSchema } from 'typebox';
import type { AgentRunInput, AgentRunResult, AgentRunState, IncomingMessage, MessagesPage } from '../common/run.js';
import { agentRunInputErrors } from '../common/validate-input.js';
import { tooDeep } from '../common/nesting.js';
import {
  AgentBatchHandle,
  batchTaskErrors,
  startBatchWorkflow,
  type StartBatchOptions,
  type VariantTask,
} from './batch-client.js';
import { createAgentSchedule, type AgentScheduleOptions } from './schedule-client.js';
import {
  incomingMessageErrors,
  runClosed,
  type ApprovalDecisionInput,
  type ApprovalRecord,
  type ClosedAck,
  type InterruptAck,
  type QueuedAck,
  type UpdateName,
} from '../common/updates.js';
import {
  approveUpdate,
  cancelUpdate,
  denyUpdate,
  endUpdate,
  eventsQuery,
  followUpSignal,
  followUpUpdate,
  interruptUpdate,
  messagesQuery,
  stateQuery,
  steerSignal,
  steerUpdate,
} from '../workflows/definitions.js';
import { keelClientDataConverter, type PayloadStorageOption } from '../node-common/payload-storage.js';
import type { EncryptionOption } from '../node-common/encryption.js';
import { keelSearchAttributesRegistered, startSearchAttributes } from '../common/search-attributes.js';
import { DEFAULT_TASK_QUEUE } from '../common/task-queues.js';
import { runSummary } from '../common/run-summary.js';
import { approvalRoute } from '../common/tree/approvals.js';
import type { StreamEvent } from '../common/stream.js';
import { streamRun, type StreamOptions } from './run-stream.js';
import { forkRun, rewindSession } from './fork/start-fork.js';
import { readTranscript } from './read-transcript.js';
import { listForks, type ListedFork } from './fork/fork-links.js';
import type { ForkOptions } from './fork/plan-fork.js';
import {
  originalsOf,
  replayBatchOptions,
  replayTask,
  ReplayHandle,
  type ReplayOptions,
  type ReplaySource,
} from './replay/start-replay.js';
import { setFleetStream } from './fleet-stream/registry.js';
import type { FleetStreamOption } from '../node-common/fleet-stream/config.js';

export const AGENT_WORKFLOW_TYPE = 'agentWorkflow';

/** Thrown by `AgentClient.start` before anything is sent when the input is malformed. */
export class InvalidAgentInputError extends Error {
  constructor(readonly errors: string[]) {
    super(`Invalid AgentRunInput: ${errors.join('; ')}`);
    this.name = 'InvalidAgentInputError';
  }
}

/**
 * Thrown by `start` with queued messages (signal-with-start) before anything is sent when a message is malformed; `errors` has one line per problem, worded as the run's Update refuses it, e.g. `followUp.0.content: is required`.
 */
export class InvalidSignalError extends Error {
  constructor(
    readonly signal: string,
    readonly errors: string[],
  ) {
    super(`Invalid ${signal}: ${errors.join('; ')}`);
    this.name = 'InvalidSignalError';
  }
}

/** The same check, in the same words, as the run's Update validator (`incomingMessageErrors`). */
function checkMessages(signal: 'followUp' | 'steer', message: unknown): void {
  const errors = incomingMessageErrors(signal, message);
  if (errors.length > 0) throw new InvalidSignalError(signal, errors);
}

/**
 * A run refused an Update: its validator said what is wrong (`message`, e.g. `Cannot queue a follow-up: the run is
 * completed`), and nothing happened. `update` is the Update's name.
 */
export class UpdateRejectedError extends Error {
  constructor(
    readonly update: string,
    message: string,
  ) {
    super(message);
    this.name = 'UpdateRejectedError';
  }
}

/**
 * A run given an `output` schema ended without a valid output: its final answer failed the schema after its
 * `outputRepairs` (failure type `InvalidAgentOutput`, docs/runs.md "Typed results"). `result`: the run's result
 * (status `failed`, no `output`; its transcript shows each answer and repair request).
 */
export class InvalidAgentOutputError extends Error {
  constructor(
    message: string,
    readonly result: AgentRunResult,
  ) {
    super(message);
    this.name = 'InvalidAgentOutputError';
  }
}

/** The type of a typed run's `output`: `Static<S>` for a TypeBox schema `S`, else `unknown` (give it: `getHandle<T>`). */
export type OutputOf<S> = S extends TSchema ? Static<S> : unknown;

/** `AgentRunResult` whose `output` (present when a run given an `output` schema completed) is typed `T`. */
export type TypedRunResult<T = unknown> = Omit<AgentRunResult, 'output'> & { output?: T };

/** Connection settings (address, namespace, TLS, API key, envconfig profile: see ConnectionSettings) and the task queue. */
export interface ConnectOptions extends ConnectionSettings {
  /** Default `keel`. */
  taskQueue?: string;
  /**
   * Where offloaded payloads are read and written; must match the workers' (default: the environment's,
   * `payloadStorageFromEnv`, else `.keel/payloads`). Reading a payload offloaded to S3 or Keel's payload directory
   * without that store rejects with `PayloadStoreMissingError`, whose message names the option to pass.
   */
  payloadStorage?: PayloadStorageOption;
  /**
   * Payload encryption (README "Encryption"); must match the workers'. Default: the key ring `$KEEL_ENCRYPTION_KEYS`
   * or `$KEEL_ENCRYPTION_KEYS_FILE` names; `{ keysFile }` or `{ keyRing }`: that one; `false`: off. Everything this
   * client sends (inputs, signals, Updates) is sealed; a sealed run read without a key ring rejects with
   * `NoKeyRingError`, whose message says what to pass.
   */
  encryption?: EncryptionOption;
  /**
   * The fleet stream transport (docs/live-output.md#fleet-transport): `{ redis: url }` makes `handle.stream()` block on
   * the Redis stream the workers append the model's deltas to (configure them alike) instead of polling Temporal,
   * falling back to the heartbeats while it is down. Default: `$KEEL_STREAM_REDIS_URL`, else none; `false`: none.
   */
  stream?: FleetStreamOption | false;
}

export interface StartOptions {
  /** Default `keel-<uuid>`. */
  workflowId?: string;
  /** Follow-up messages queued at start (signal-with-start). */
  followUp?: IncomingMessage | IncomingMessage[];
  /** Steering messages queued at start (signal-with-start). */
  steer?: IncomingMessage | IncomingMessage[];
}

/** Temporal refuses a payload over 2 MB; the run input travels as one. */
const MAX_INPUT_BYTES = 2 * 1024 * 1024;

/** The line `start` reports for an input over Temporal's payload limit. */
export const inputTooLarge = (bytes: number): string =>
  `input: ${(bytes / 1024 / 1024).toFixed(1)} MB of JSON is over Temporal's 2 MB payload limit; shorten the prompt or the prior messages (put large documents where a tool can read them)`;

/** Starts and finds Keel runs. */
export class AgentClient {
  /** Whether the namespace has Keel's search attributes (asked once, at the first start). */
  private searchAttributesRegistered?: Promise<boolean>;

  constructor(
    readonly client: Client,
    readonly taskQueue = DEFAULT_TASK_QUEUE,
  ) {}

  static async connect(opts: ConnectOptions = {}): Promise<AgentClient> {
    const resolved = resolveConnection(opts);
    const connection = await Connection.connect({ ...connectOptions(resolved), interceptors: clientInterceptors() });
    const client = new Client({
      connection,
      namespace: resolved.namespace,
      dataConverter: keelClientDataConverter(opts.payloadStorage, opts.encryption),
    });
    setFleetStream(client.workflow, opts.stream);
    return new AgentClient(client, opts.taskQueue ?? DEFAULT_TASK_QUEUE);
  }

  /**
   * Validates the input (throws `InvalidAgentInputError` naming every bad field), then starts `agentWorkflow`.
   *
   * `followUp` or `steer` starts the run with those messages already queued (Temporal's signal-with-start: the start
   * and the signal are one request, so the run sees the messages from its first step, as if they had been signalled at
   * once). Messages are validated like `AgentRunHandle.followUp` (`InvalidSignalError`). Signal-with-start carries one
   * signal, so give one of the two, not both. Unlike a plain start, a run with that `workflowId` that is already running
   * is signalled instead of refused (Temporal's signal-with-start semantics; the server accepts no FAIL policy here).
   */
  async start<S extends object | undefined = undefined>(
    input: AgentRunInput & { output?: S },
    opts: StartOptions = {},
  ): Promise<AgentRunHandle<OutputOf<S>>> {
    const errors = agentRunInputErrors(input);
    // measured only once it is known to serialise (a value nested thousands deep throws RangeError in JSON.stringify)
    const bytes = tooDeep(input) === undefined ? Buffer.byteLength(JSON.stringify(input ?? null)) : 0;
    if (bytes > MAX_INPUT_BYTES) errors.push(inputTooLarge(bytes));
    if (errors.length > 0) throw new InvalidAgentInputError(errors);
    if (opts.followUp !== undefined && opts.steer !== undefined) {
      throw new InvalidSignalError('start', [
        'followUp and steer: give one of them (signal-with-start carries one signal)',
      ]);
    }
    const queued =
      opts.followUp !== undefined ? ('followUp' as const) : opts.steer !== undefined ? ('steer' as const) : undefined;
    // set at start when the namespace has them: the run is found by model and status at once, and its first step has
    // none of Keel's values to upsert (docs/architecture.md#visibility says what that saves: nothing yet)
    this.searchAttributesRegistered ??= keelSearchAttributesRegistered(
      this.client.connection,
      this.client.options.namespace,
    );
    const options = {
      taskQueue: this.taskQueue,
      workflowId: opts.workflowId ?? `keel-${crypto.randomUUID()}`,
      args: [input],
      staticSummary: runSummary(input),
      staticDetails: detailsOf(input),
      ...((await this.searchAttributesRegistered) ? { typedSearchAttributes: startSearchAttributes(input.model) } : {}),
    };
    if (queued) {
      const messages = queued === 'followUp' ? opts.followUp : opts.steer;
      checkMessages(queued, messages);
      const handle = await this.client.workflow.signalWithStart(AGENT_WORKFLOW_TYPE, {
        ...options,
        signal: queued === 'followUp' ? followUpSignal : steerSignal,
        signalArgs: [messages as IncomingMessage[]],
      });
      return new AgentRunHandle<OutputOf<S>>(this.client.workflow.getHandle(handle.workflowId));
    }
    const handle = await this.client.workflow.start(AGENT_WORKFLOW_TYPE, options);
    return new AgentRunHandle<OutputOf<S>>(this.client.workflow.getHandle(handle.workflowId));
  }

  /**
   * "Send a message to conversation `workflowId`, creating it if needed", atomically (update-with-start): when no run
   * with that id is running, starts a `mode: 'session'` run from `input` (no prompt: the message is its first one),
   * then delivers the message with the `followUp` Update. Resolves with the acknowledgement once the run took it.
   */
  async sendToConversation(
    workflowId: string,
    message: IncomingMessage | IncomingMessage[],
    input: Omit<AgentRunInput, 'prompt' | 'mode'>,
  ): Promise<{ handle: AgentRunHandle; ack: QueuedAck }> {
    const start: AgentRunInput = { ...input, mode: 'session' };
    const errors = agentRunInputErrors(start);
    if (errors.length > 0) throw new InvalidAgentInputError(errors);
    const startWorkflowOperation = new WithStartWorkflowOperation(AGENT_WORKFLOW_TYPE, {
      taskQueue: this.taskQueue,
      workflowId,
      args: [start],
      workflowIdConflictPolicy: 'USE_EXISTING',
      staticSummary: `conversation ${workflowId}`,
      staticDetails: detailsOf(start),
    });
    const handle = this.getHandle(workflowId);
    const ack = await rejected(followUpUpdate.name, () =>
      this.client.workflow.executeUpdateWithStart(followUpUpdate, { args: [message], startWorkflowOperation }),
    );
    return { handle, ack };
  }

  /**
   * A handle on an existing run (follows its continue-as-new chain). Nothing is sent until a method is called. `T`:
   * the type of its `output`, when it was started with one (unchecked here: the run validated it).
   */
  getHandle<T = unknown>(workflowId: string): AgentRunHandle<T> {
    return new AgentRunHandle<T>(this.client.workflow.getHandle(workflowId));
  }

  /**
   * Rewinds the open session `workflowId` to turn `opts.atTurn` (docs/runs.md#fork-and-rewind): once it waits for
   * input, ends it and starts a new run under the same id from its first `atTurn` turns (`opts` as for
   * `AgentRunHandle.fork`). Rejects with `InvalidForkError` for a task, a busy or closed session, or a bad turn.
   */
  async rewind(workflowId: string, opts: Omit<ForkOptions, 'workflowId'>): Promise<AgentRunHandle> {
    return new AgentRunHandle(await rewindSession(this.client.workflow.getHandle(workflowId), opts));
  }

  /** The same as `getHandle`: the run with this workflow id (e.g. a conversation id chosen by your service). */
  get<T = unknown>(workflowId: string): AgentRunHandle<T> {
    return this.getHandle<T>(workflowId);
  }

  /**
   * Starts a durable batch (`agentBatchWorkflow`): task `i` runs as child `<batchId>-<i>`, at most `concurrency` at a
   * time. Every task is validated first (`InvalidAgentInputError`, each line prefixed `task <i>:`), with `variants` as
   * each variant's child gets it: a task may leave out the `model` every variant names.
   */
  async startBatch(
    tasks: (AgentRunInput | VariantTask)[],
    opts: StartBatchOptions = {},
  ): Promise<AgentBatchHandle<AgentRunHandle>> {
    const errors = tasks.flatMap((t, i) => batchTaskErrors(t, opts.variants).map((e) => `task ${i}: ${e}`));
    if (errors.length > 0) throw new InvalidAgentInputError(errors);
    const valid = tasks as AgentRunInput[]; // checked: each has a model, its own or every variant's
    return new AgentBatchHandle(await startBatchWorkflow(this.client, this.taskQueue, valid, opts), (id) =>
      this.getHandle(id),
    );
  }

  /**
   * Counterfactual replay (docs/runs.md#counterfactual-replay): each run of `source` runs again as a task of a new
   * batch, from its input before turn 1, with `opts.model` / `opts.system`; a tool call matching a recorded one gets
   * the recorded result without executing, another is answered "not in the record" or runs live (`opts.liveTools`).
   * `report()` on the returned handle waits for the batch and compares each replay with its original.
   */
  async replay(source: ReplaySource, opts: ReplayOptions = {}): Promise<ReplayHandle> {
    const { ids, graded, shape, old } = await originalsOf(this.client, source);
    if (ids.length === 0) throw new InvalidAgentInputError(['replay: no recorded run to replay']);
    const tasks = await Promise.all(ids.map((id, i) => replayTask(this.client, id, opts, graded[i])));
    const batch = await this.startBatch(tasks, replayBatchOptions(opts, ids.length));
    const regrade = opts.grade !== undefined;
    return new ReplayHandle(batch, ids, this.client, {
      shape,
      tasks,
      regrade,
      ...(opts.graders ? { graders: opts.graders } : {}),
      ...(old ? { old } : {}),
    });
  }

  /** A handle on an existing batch. */
  getBatch(batchId: string): AgentBatchHandle<AgentRunHandle> {
    return new AgentBatchHandle(this.client.workflow.getHandle(batchId), (id) => this.getHandle(id));
  }

  /**
   * Creates a Temporal Schedule that starts a batch of `tasks` (or one `run`) at each `cron` / `every` time, on this
   * client's task queue (client/schedule-client.ts). Every task is validated first (`InvalidAgentInputError`); a bad
   * spec or a task list over ~1 MB of JSON rejects with `InvalidScheduleError`; a taken id with Temporal's
   * `ScheduleAlreadyRunning`. The overlap policy is SKIP unless given. Each batch's id is `keel-batch-<scheduleId>-
   * <scheduled time>` (`keel-run-…` for a run). Pause, backfill, describe and delete with the returned handle
   * (Temporal's `ScheduleHandle`), trigger with `triggerSchedule(handle)` (the handle's own `trigger()` ignores the
   * schedule's overlap policy); `recentScheduled` gives the last batches with their outcome counts.
   */
  async schedule(opts: AgentScheduleOptions): Promise<ScheduleHandle> {
    const errors = [
      ...(opts.tasks ?? []).flatMap((t, i) => batchTaskErrors(t, opts.batch?.variants).map((e) => `task ${i}: ${e}`)),
      ...(opts.run ? agentRunInputErrors(opts.run) : []),
    ];
    if (errors.length > 0) throw new InvalidAgentInputError(errors);
    return createAgentSchedule(this.client, this.taskQueue, opts);
  }

  /**
   * A handle on an existing schedule (Temporal's `ScheduleHandle`). Its `trigger()` without a policy starts under
   * ALLOW_ALL, not the schedule's policy: `triggerSchedule(handle)` (from `keel/client`) uses the schedule's.
   */
  getSchedule(scheduleId: string): ScheduleHandle {
    return this.client.schedule.getHandle(scheduleId);
  }

  async close(): Promise<void> {
    await this.client.connection.close();
  }
}

/** Signals, queries and the result of one run; `T`: the type of its `output` (docs/runs.md "Typed results"). */
export class AgentRunHandle<T = unknown> {
  constructor(readonly workflow: WorkflowHandle) {}

  get workflowId(): string {
    return this.workflow.workflowId;
  }

  /**
   * Queue a message for when the agent would stop; in a waiting session it starts a new agent run. Uses the `followUp`
   * Update: resolves with the queue lengths, rejects with `UpdateRejectedError` for a malformed message or a closed run.
   */
  followUp(message: IncomingMessage | IncomingMessage[]): Promise<QueuedAck> {
    return this.update(followUpUpdate, message);
  }

  /** Queue a message injected after the current tool batch (`steer` Update; acknowledged like `followUp`). */
  steer(message: IncomingMessage | IncomingMessage[]): Promise<QueuedAck> {
    return this.update(steerUpdate, message);
  }

  /**
   * Abort the current agent run. Answers `{ interrupted: true, next }`: `answers-queued` (a session with queued messages
   * starts its next agent run on them at once), `waits` (a session waits for input) or `stops` (a task ends `stopped`);
   * `{ interrupted: false }` when nothing was running.
   */
  interrupt(): Promise<InterruptAck> {
    return this.update(interruptUpdate);
  }

  /** Abort the current agent run and end the workflow as Canceled; resolves with `{ status: 'cancelled' }`. */
  cancel(reason?: string): Promise<ClosedAck> {
    return this.update(cancelUpdate, ...(reason === undefined ? [] : [reason]));
  }

  /**
   * Finish a session once idle; resolves with the final status once the run has closed (also when it continued-as-new
   * on the way: then this waits for the result).
   */
  async end(): Promise<ClosedAck> {
    const ack = await this.update(endUpdate);
    if (!ack.continuedAsNew) return ack;
    return { status: (await this.result()).status };
  }

  /**
   * Let a tool call awaiting approval run. `argsDigest` from `state().pendingApprovals` binds it to those arguments.
   * A run whose worker verifies approvals needs `token` (a JWT bound to the run, call, digest and verb; README "Who may
   * approve"): the answer comes once the worker verified it, and a refusal (`UpdateRejectedError`) changes nothing.
   *
   * On a tree's root, a call one of its sub-agents waits for (listed with `workflowId` and `path`) is decided there:
   * the root refuses it with where it waits, and the decision is sent to that sub-agent's run (found in the root's
   * `state()`), which answers as at top level; a signed decision's token then binds the sub-agent's workflow id (`keel_run`), the listed
   * `workflowId`. A call id several sub-agents wait for is refused, naming them (decide it on the sub-agent's run).
   */
  approve(decision: ApprovalDecisionInput): Promise<ApprovalRecord> {
    return this.decide(approveUpdate, decision);
  }

  /**
   * Refuse a tool call awaiting approval: it gets `Tool <name> was denied by <approver>: <reason>`. Signed like
   * `approve` on a worker that verifies approvals (a token with `keel_decision: "deny"`); routed to a sub-agent's run
   * like `approve`.
   */
  deny(decision: ApprovalDecisionInput): Promise<ApprovalRecord> {
    return this.decide(denyUpdate, decision);
  }

  /** Sends `approve` / `deny` to the run that decides the call: this one, or the sub-agent whose call it is. */
  private async decide(
    def: UpdateDefinition<ApprovalRecord, [ApprovalDecisionInput]>,
    decision: ApprovalDecisionInput,
  ): Promise<ApprovalRecord> {
    try {
      return await this.update(def, decision);
    } catch (err) {
      // the run's own calls, and a sub-agent's already decided, are answered by this run as at top level
      const toolCallId = (decision as Partial<ApprovalDecisionInput> | undefined)?.toolCallId;
      if (!(err instanceof UpdateRejectedError) || typeof toolCallId !== 'string') throw err;
      const st = await this.state().catch(() => undefined);
      const route = st ? approvalRoute(this.workflowId, st, toolCallId) : undefined;
      if (route && 'ambiguous' in route) throw new UpdateRejectedError(def.name, route.ambiguous);
      if (!route?.pending || route.workflowId === this.workflowId) throw err;
      return new AgentRunHandle(this.workflow.client.getHandle(route.workflowId)).update(def, decision);
    }
  }

  /** Executes an Update and waits for its result; a validator's refusal becomes `UpdateRejectedError`. */
  private async update<Ret, Args extends unknown[]>(def: UpdateDefinition<Ret, Args>, ...args: Args): Promise<Ret> {
    try {
      // by name: the definition's argument tuple is checked at this method's signature
      return await rejected(def.name, () =>
        this.workflow.executeUpdate<Ret, [unknown, ...unknown[]]>(def.name, {
          args: args as unknown as [unknown, ...unknown[]],
        }),
      );
    } catch (err) {
      if (err instanceof UpdateRejectedError) throw err;
      // a closed run is refused by the server before any validator: say so in the validators' words
      const status = await this.workflow.describe().then(
        (d) => d.status.name,
        () => undefined,
      );
      if (status && status !== 'RUNNING')
        throw new UpdateRejectedError(
          def.name,
          runClosed(def.name as UpdateName, `is ${status === 'CANCELLED' ? 'cancelled' : status.toLowerCase()}`),
        );
      throw err;
    }
  }

  state(): Promise<AgentRunState> {
    return this.workflow.query(stateQuery);
  }

  messages(opts: { from?: number; limit?: number } = {}): Promise<MessagesPage> {
    return this.workflow.query(messagesQuery, opts);
  }

  /** The whole transcript, paged. */
  allMessages(): Promise<Message[]> {
    return readTranscript(this.workflow);
  }

  /**
   * Starts a new run whose transcript is this run's first `opts.atTurn` turns (docs/runs.md#fork-and-rewind), with the
   * same configuration unless `model` or `system` say otherwise, on the same task queue; this run is not touched. Its
   * memo and summary say `forked from <id> at turn N`; `forks()` finds it from here. Rejects with `InvalidForkError`
   * (a turn the run has not completed, nothing to go on from without a `prompt`, an invalid input).
   */
  async fork(opts: ForkOptions): Promise<AgentRunHandle> {
    return new AgentRunHandle(await forkRun(this.workflow, opts));
  }

  /** This run's forks, newest first, from Temporal visibility (`KeelForkedFrom = "<id>"`; a new fork may show late). */
  forks(limit?: number): Promise<ListedFork[]> {
    return listForks(this.workflow.client, this.workflowId, limit);
  }

  events(opts: { after?: number; limit?: number } = {}): Promise<EventsPage> {
    return this.workflow.query(eventsQuery, opts);
  }

  /**
   * The run's live event stream (docs/architecture.md#live-output): the durable events of `events()` and the model's
   * deltas (`message_update` for text, thinking and tool-call arguments; `attempt_reset` before a retried attempt's
   * first delta) and tools' `tool_execution_update`s (the latest `onUpdate` snapshot of each running tool), each with
   * an increasing `offset` that goes on across continue-as-new. Pass the last offset you applied as `from` to resume after it: nothing is
   * repeated or skipped. Before each assistant `message_start` comes the model call's tail: per content block, what
   * the consumer still lacks of the final text (deltas no heartbeat carried before the call completed, or older than a
   * call's live window of 16,384 characters). Reconnects by itself; ends when the run has closed and its last events
   * were delivered, or when `signal` aborts. Applied in order (see `StreamView`), the deltas alone give exactly each
   * assistant message's final text.
   */
  stream(opts: StreamOptions = {}): AsyncGenerator<StreamEvent> {
    return streamRun(this.workflow, opts);
  }

  /**
   * Waits for the end. A failed run (`AgentRunFailed`) resolves with its result (status `failed`); a cancelled run
   * resolves with status `cancelled`. A run given an `output` schema that completed carries its validated `output`;
   * one that found no valid output rejects with `InvalidAgentOutputError`. Other failures (invalid input,
   * termination) reject.
   */
  async result(): Promise<TypedRunResult<T>> {
    try {
      return (await this.workflow.result()) as TypedRunResult<T>;
    } catch (err) {
      if (
        err instanceof WorkflowFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === ErrorType.InvalidAgentOutput
      ) {
        throw new InvalidAgentOutputError(err.cause.message, err.cause.details?.[0] as AgentRunResult);
      }
      if (
        err instanceof WorkflowFailedError &&
        err.cause instanceof ApplicationFailure &&
        err.cause.type === ErrorType.AgentRunFailed
      ) {
        return err.cause.details?.[0] as TypedRunResult<T>;
      }
      if (err instanceof WorkflowFailedError && (await this.workflow.describe()).status.name === 'CANCELLED') {
        const st = await this.state();
        return {
          status: 'cancelled',
          finalText: st.lastReply ?? '',
          newMessages: [],
          usage: st.usage,
          turns: st.turns,
        };
      }
      throw err;
    }
  }
}

/** Runs an Update call; a validator's refusal becomes `UpdateRejectedError` with the validator's text. */
async function rejected<T>(update: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError && err.cause instanceof ApplicationFailure)
      throw new UpdateRejectedError(update, err.cause.message);
    throw err;
  }
}

function detailsOf(input: AgentRunInput): string {
  const rows = [
    `model: ${input.model}`,
    `tools: ${(input.tools ?? []).join(', ') || '(none)'}`,
    `mode: ${input.mode ?? 'task'}`,
  ];
  if (input.metadata && Object.keys(input.metadata).length) rows.push(`metadata: ${JSON.stringify(input.metadata)}`);
  return rows.join('\n\n');
}
