/** The tool activities. The workflow schedules them; each reads its call from the transcript by reference. */
import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { ToolHeartbeat } from '../../common/events.js';
import { toolCallsOf, type AssistantMessage, type ToolCall } from '../../common/messages.js';
import type {
  ExecuteToolCallInput,
  PreparedCall,
  PrepareToolCallsInput,
  RunToolCallResult,
  ToolCallRef,
  ToolOutcome,
} from '../../common/wire.js';
import type { AgentHooks } from '../hooks.js';
import { startHeartbeat } from '../heartbeat.js';
import type { TranscriptCache } from '../transcript.js';
import type { ToolLookup } from './tool-lookup.js';
import { executeCall, prepareCall, type CallScope } from './run-tool.js';
import { toolResultMessage } from '../../common/tool-result.js';
import { detailsWithApproval } from '../../common/updates.js';
import { ErrorType } from '../../common/errors.js';
import type { ReplayRef } from '../../common/replay.js';
import type { ReplayRecords } from '../replay/replay-records.js';
import type { FleetStreamStore } from '../../node-common/fleet-stream/store.js';
import { ToolUpdateAppender } from './fleet-tool-updates.js';

export interface ToolActivityDeps {
  /** The tools a run names: own, MCP, recorded sub-agents (tool-lookup.ts). */
  tools: ToolLookup;
  hooks: AgentHooks;
  transcript: TranscriptCache;
  /** This worker's home queue (worker affinity): a local call whose `home` is another queue is refused. */
  homeQueue?: () => string | undefined;
  /** The records a replaying run's calls are served from (activities/replay/); absent on a worker without a client. */
  replay?: ReplayRecords | undefined;
  /** The fleet stream transport's store (docs/live-output.md#fleet-transport): tool updates are appended there too. */
  fleet?: FleetStreamStore;
}

/**
 * A replaying run's call (`ref`, its `k`-th): the result served from the record or the "not in the record" result,
 * or undefined when the call runs as usual (not a replay, or it runs live).
 */
async function replayed(
  deps: ToolActivityDeps,
  ref: ReplayRef | undefined,
  k: number,
  s: PositionedScope,
): Promise<ToolOutcome | undefined> {
  if (!ref) return undefined;
  if (!deps.replay)
    throw ApplicationFailure.nonRetryable(
      'A replaying run needs a worker with a Temporal client to read its record: build the worker with createAgentWorker',
      ErrorType.Internal,
    );
  const decision = await deps.replay.decide(ref, k, s.call, s.tool);
  return decision === 'live' ? undefined : decision.served;
}

/** `position` among the message's calls; absent when the call came in the input and the message was not read. */
type PositionedScope = CallScope & { position?: number };

/**
 * The position of the call: `callIndex` when given (its id must match), else the first call with the id (workflows
 * that do not send positions). Undefined when there is no such call.
 */
export function locateCall(
  calls: readonly ToolCall[],
  toolCallId: string,
  callIndex: number | undefined,
): number | undefined {
  if (callIndex === undefined) {
    const first = calls.findIndex((c) => c.id === toolCallId);
    return first === -1 ? undefined : first;
  }
  return Number.isInteger(callIndex) && calls[callIndex]?.id === toolCallId ? callIndex : undefined;
}

/**
 * `<workflowId>/<toolCallId>`, identical on every attempt of the call. A call whose id an earlier call of the same
 * message already uses gets `<workflowId>/<toolCallId>#<position>`, so two calls never share a key.
 */
export function idempotencyKey(workflowId: string, calls: readonly ToolCall[], position: number): string {
  const id = calls[position].id;
  const first = calls.findIndex((c) => c.id === id);
  return first === position ? `${workflowId}/${id}` : `${workflowId}/${id}#${position}`;
}

/** `{ args }` when preparation changed the raw arguments, else nothing (the activity input stays small). */
function changedArgs(args: unknown, raw: unknown): { args?: unknown } {
  return JSON.stringify(args) === JSON.stringify(raw) ? {} : { args };
}

/**
 * A local activity (docs/local-tools.md) with a `home` runs only on that home's worker: elsewhere it is refused with
 * `KeelNotHome` before anything is read or run, and the workflow schedules the call as an activity on the home queue.
 */
function checkHome(deps: ToolActivityDeps, home: string | undefined): void {
  if (home === undefined || !Context.current().info.isLocal) return;
  const own = deps.homeQueue?.();
  if (own !== home)
    throw ApplicationFailure.nonRetryable(
      `Tool call refused as a local activity: this worker's home queue is ${own ?? '(none)'}, not ${home}`,
      ErrorType.NotHome,
    );
}

/** Which call of the message: its id, its position if the workflow sent one, the call itself if it sent that. */
interface CallId {
  toolCallId: string;
  callIndex?: number;
  call?: ToolCall;
}

/** The worker has a hook that is given the assistant message (so a call in the input is not enough). */
function hooksReadMessage(hooks: AgentHooks): boolean {
  return Boolean(hooks.beforeToolCall || hooks.afterToolCall || hooks.needsApproval);
}

/**
 * The call's scope. The assistant message comes from this worker's transcript copy; a call carried in the input (from
 * 0.8.0) is used instead when the copy lacks the message and no hook reads it, so no query is sent.
 */
async function scope(
  deps: ToolActivityDeps,
  ref: Pick<ToolCallRef, 'run' | 'assistantIndex' | 'digest' | 'metadata'>,
  id: CallId,
): Promise<PositionedScope> {
  const carried =
    id.call?.id === id.toolCallId && id.callIndex === undefined && !hooksReadMessage(deps.hooks) ? id.call : undefined;
  if (carried && !deps.transcript.held(ref.run, ref.assistantIndex, ref.digest))
    return scopeOf(deps, ref, { call: carried, key: `${ref.run.workflowId}/${carried.id}` });
  const assistant = (await deps.transcript.message(ref.run, ref.assistantIndex, ref.digest)) as AssistantMessage;
  const calls = assistant?.role === 'assistant' ? toolCallsOf(assistant) : [];
  const position = locateCall(calls, id.toolCallId, id.callIndex);
  if (position === undefined) {
    const at = id.callIndex === undefined ? '' : ` at position ${id.callIndex}`;
    throw ApplicationFailure.nonRetryable(
      `Tool call ${id.toolCallId}${at} is not in message ${ref.assistantIndex} of ${ref.run.workflowId}`,
      ErrorType.Internal,
    );
  }
  return scopeOf(deps, ref, {
    call: calls[position],
    position,
    assistant,
    key: idempotencyKey(ref.run.workflowId, calls, position),
  });
}

async function scopeOf(
  deps: ToolActivityDeps,
  ref: Pick<ToolCallRef, 'run' | 'metadata'>,
  found: { call: ToolCall; position?: number; assistant?: AssistantMessage; key: string },
): Promise<PositionedScope> {
  const ctx = Context.current();
  return {
    tool: await deps.tools.tool(ref.run.workflowId, found.call.name),
    call: found.call,
    ...(found.position !== undefined ? { position: found.position } : {}),
    ...(found.assistant ? { assistantMessage: found.assistant } : {}),
    hooks: deps.hooks,
    signal: ctx.cancellationSignal,
    context: {
      workflowId: ref.run.workflowId,
      runId: ctx.info.workflowExecution?.runId ?? '',
      idempotencyKey: found.key,
      attempt: ctx.info.attempt,
      metadata: ref.metadata,
    },
  };
}

/**
 * The workflow appends results in source order right after the assistant message, so the k-th call's result lands at
 * assistantIndex + 1 + k (unless an abort cut the batch short, which the next digest check detects).
 */
function remember(deps: ToolActivityDeps, ref: ToolCallRef, s: PositionedScope, outcome: ToolOutcome): void {
  if (s.position === undefined) return;
  deps.transcript.remember(ref.run, ref.assistantIndex + 1 + s.position, toolResultMessage(s.call, outcome));
}

/**
 * Runs `fn` while heartbeating, so cancellation reaches hooks and tools; tool progress goes out as heartbeat details
 * (and to the fleet stream store, when the worker has one).
 */
async function heartbeating<T>(
  fn: (onProgress: (s: CallScope, partialResult: unknown) => void) => Promise<T>,
  fleet?: FleetStreamStore,
): Promise<T> {
  let updates = 0;
  const { isLocal, workflowExecution } = Context.current().info;
  // a local activity cannot heartbeat (docs/local-tools.md): its progress updates are dropped
  if (isLocal) return fn(() => undefined);
  const heartbeat = startHeartbeat(Context.current());
  const { workflowId, runId } = workflowExecution ?? {};
  const relayed = fleet && workflowId && runId ? new ToolUpdateAppender(fleet, workflowId, runId) : undefined;
  try {
    return await fn((s, partialResult) => {
      updates += 1;
      const { id: toolCallId, name: toolName, arguments: args } = s.call;
      const t: ToolHeartbeat = { kind: 'tool', toolCallId, toolName, args, partialResult, updates };
      heartbeat.update(t);
      relayed?.update(t);
    });
  } finally {
    heartbeat.stop();
  }
}

/** The tool activities over `deps`: prepareToolCalls, executeToolCall and runToolCall. */
export function createToolActivities(deps: ToolActivityDeps) {
  return {
    /** Prepares the calls strictly in source order (lookup, prepareArguments, validation, beforeToolCall); stops at an abort. */
    async prepareToolCalls(input: PrepareToolCallsInput): Promise<PreparedCall[]> {
      return heartbeating(async () => {
        const out: PreparedCall[] = [];
        for (const [k, c] of input.calls.entries()) {
          const { toolCallId, callIndex } = c;
          const s = await scope(deps, input, c);
          const id = { toolCallId, ...(callIndex !== undefined ? { callIndex } : {}) };
          const served = await replayed(deps, input.replay, k, s);
          if (served) {
            out.push({ ...id, status: 'immediate', outcome: served });
            continue;
          }
          const p = await prepareCall(s);
          if (p.status === 'immediate') out.push({ ...id, ...p });
          else {
            const args = changedArgs(p.args, s.call.arguments);
            out.push(
              p.approval
                ? { ...id, status: 'approval', ...args, argsDigest: p.approval.argsDigest }
                : { ...id, status: 'runnable', ...args },
            );
          }
          if (s.signal.aborted) break;
        }
        return out;
      });
    },

    /** Executes one prepared call and finalises it (afterToolCall). */
    async executeToolCall(input: ExecuteToolCallInput): Promise<ToolOutcome> {
      checkHome(deps, input.home);
      return heartbeating(async (progress) => {
        const s = await scope(deps, input, input);
        const executed = await executeCall(
          { ...s, tool: s.tool! },
          input.args === undefined ? s.call.arguments : input.args,
          (p) => progress(s, p),
        );
        const outcome = input.approval
          ? { ...executed, details: detailsWithApproval(executed.details, input.approval) }
          : executed;
        remember(deps, input, s, outcome);
        return outcome;
      }, deps.fleet);
    },

    /**
     * Prepare, execute and finalise one call in a single activity (sequential batches, single calls). A call needing
     * approval is only prepared (`prepared: 'approval'`); the workflow runs it with `executeToolCall` once approved.
     */
    async runToolCall(input: ToolCallRef): Promise<RunToolCallResult> {
      checkHome(deps, input.home);
      return heartbeating(async (progress) => {
        const s = await scope(deps, input, input);
        const served = await replayed(deps, input.replay, 0, s);
        if (served) {
          remember(deps, input, s, served);
          return { prepared: 'immediate' as const, outcome: served };
        }
        const p = await prepareCall(s);
        if (p.status === 'runnable' && p.approval)
          return {
            prepared: 'approval' as const,
            ...changedArgs(p.args, s.call.arguments),
            argsDigest: p.approval.argsDigest,
          };
        const result =
          p.status === 'immediate'
            ? { prepared: 'immediate' as const, outcome: p.outcome }
            : {
                prepared: 'executed' as const,
                outcome: await executeCall({ ...s, tool: s.tool! }, p.args, (u) => progress(s, u)),
              };
        remember(deps, input, s, result.outcome);
        return result;
      }, deps.fleet);
    },
  };
}
