/**
 * The order rules of one assistant message's tool calls (docs/architecture.md#tool-calls): length truncation, repeated
 * call ids, unknown tools, sequential vs parallel, preparation in source order, executions overlapping,
 * `tool_execution_end` in completion order, results in source order, the terminate rule, a batch suspended across
 * continue-as-new and resumed. Failures never escape: each becomes an `isError` result. A call's activities are in
 * tool-call.ts, where they run in tool-placement.ts, their tracking in tool-tracking.ts.
 */
import { workflowInfo } from '@temporalio/workflow';
import { duplicateToolCallId, lengthTruncated, OPERATION_ABORTED } from '../../common/errors.js';
import {
  toolCallsOf,
  type AssistantMessage,
  type Message,
  type ToolCall,
  type ToolResultMessage,
} from '../../common/messages.js';
import { toolResultMessage } from '../../common/tool-result.js';
import type { ToolOutcome } from '../../common/wire.js';
import { PATCH } from '../patches.js';
import type { SuspendedBatch, StoredPendingApproval } from './state.js';
import {
  approveThenExecute,
  execute,
  prepareAndExecute,
  prepareKnown,
  SUSPEND,
  toolInfo,
  unknownToolText,
  type Suspend,
  type ToolCallHost,
  type ToolSummaries,
} from './tool-call.js';
import { loopErrorOutcome } from './tool-tracking.js';
import { since } from '../since.js';

/** What a tool batch needs of the session: `AgentSession` implements it (workflows/agent/session.ts), and the loop passes it. */
export interface ToolBatchHost extends ToolCallHost {
  /** Appends a message to the transcript (message_start, push, digest, message_end); returns its index. */
  append(message: Message): number;
  /** The call of message `assistantIndex` awaits approval here (a batch resumed after continue-as-new). */
  isPending(toolCallId: string, assistantIndex: number): StoredPendingApproval | undefined;
  /** History size below which continue-as-new is not tried again (a resumed batch pushes it on). */
  continueAsNewRetryAt: number;
}

/** `suspended`: continue-as-new is due while calls await approval; the turn loop carries the batch into the new run. */
export type BatchResult =
  { results: ToolResultMessage[]; terminate: boolean; suspended?: undefined } | { suspended: SuspendedBatch };

/**
 * Runs the calls of the assistant message at `assistantIndex`. A message that reuses a call id: activities find a
 * call's arguments by its id, so only the first call with an id runs; each later one is refused (an error result
 * after the others, never executed) and the batch does not terminate. `resume`: the batch carried across
 * continue-as-new (its finished calls, the rest pending or not started). `summaries`: the activity summaries
 * `callModel` computed for the message's tool calls (none for a resumed batch: each call gets the generic one).
 */
export function runToolBatch(
  h: ToolBatchHost,
  assistant: AssistantMessage,
  assistantIndex: number,
  resume?: SuspendedBatch,
  summaries?: Record<string, string>,
): Promise<BatchResult> {
  const all = toolCallsOf(assistant);
  if (assistant.stopReason === 'length') return Promise.resolve(truncatedBatch(h, all));
  const repeated = repeatedIds(all);
  const refuse = repeated.size > 0 && (resume ? since(PATCH.resumedRepeatedIds) : since(PATCH.duplicateCallIds));
  const calls = refuse ? all.filter((_, i) => !repeated.has(i)) : all;
  const sequential =
    h.config.toolExecution === 'sequential' ||
    calls.some((c) => toolInfo(h.tools, c.name)?.executionMode === 'sequential');
  const done = new Map<string, Finalised>();
  const finish = (outcome: Suspend | void): BatchResult =>
    batchResult(h, { all, calls, refused: refuse ? repeated : undefined, assistantIndex }, done, outcome);
  // one call (most turns): one `then` on its activity, no async function awaiting another (same commands)
  if (!resume && calls.length === 1) return oneCall(h, calls[0], assistantIndex, done, summaries, finish);
  const outcome = resume
    ? resumedBatch(h, calls, assistantIndex, resume, done)
    : sequential
      ? sequentialBatch(h, calls, assistantIndex, done, summaries)
      : parallelBatch(h, calls, assistantIndex, done, summaries);
  return outcome.then(finish);
}

/** The batch's calls: all of the message's, those that ran, the positions refused as repeated ids (when refused). */
interface BatchCalls {
  all: ToolCall[];
  calls: ToolCall[];
  refused: Set<number> | undefined;
  assistantIndex: number;
}

/** The results of a batch that ran (in source order, then the refused repeats), or the batch suspended. */
function batchResult(
  h: ToolBatchHost,
  b: BatchCalls,
  done: Map<string, Finalised>,
  outcome: Suspend | void,
): BatchResult {
  if (outcome === SUSPEND) {
    const unrecorded = [...done].filter(([, f]) => !f.recorded);
    return {
      suspended: {
        assistantIndex: b.assistantIndex,
        done: Object.fromEntries(unrecorded.map(([id, f]) => [id, f.outcome])),
      },
    };
  }
  recordInOrder(h, b.calls, done);
  const outcomes = b.calls.flatMap((call) => done.get(call.id) ?? []);
  const repeated = b.refused;
  const refused = repeated ? b.all.filter((_, i) => repeated.has(i)).map((call) => refuseRepeated(h, call)) : [];
  return {
    results: [...outcomes, ...refused].map((o) => o.message),
    terminate: refused.length === 0 && outcomes.length > 0 && outcomes.every((o) => o.outcome.terminate === true),
  };
}

/** Positions of calls whose id an earlier call of the same message already has. */
function repeatedIds(calls: ToolCall[]): Set<number> {
  const seen = new Set<string>();
  const out = new Set<number>();
  calls.forEach((c, i) => (seen.has(c.id) ? out.add(i) : seen.add(c.id)));
  return out;
}

/** A later call with an id an earlier call of the message has: its error result, at once; never executed. */
function refuseRepeated(h: ToolBatchHost, call: ToolCall): Finalised {
  start(h, call);
  const f = settleCall(h, call, loopErrorOutcome(duplicateToolCallId(call.id, call.name)));
  h.append(f.message);
  return f;
}

interface Finalised {
  message: ToolResultMessage;
  outcome: ToolOutcome;
  /** Already appended to the transcript (sequential batches record each result as it finishes). */
  recorded?: boolean;
}

/** Appends the results not yet in the transcript, in assistant source order. */
function recordInOrder(h: ToolBatchHost, calls: ToolCall[], done: Map<string, Finalised>): void {
  for (const call of calls) {
    const f = done.get(call.id);
    if (f && !f.recorded) {
      h.append(f.message);
      f.recorded = true;
    }
  }
}

/** Length truncation: nothing is looked up, validated or executed; the batch never terminates. */
function truncatedBatch(h: ToolBatchHost, calls: ToolCall[]): BatchResult {
  const results = calls.map((call) => {
    start(h, call);
    const finalised = settleCall(h, call, loopErrorOutcome(lengthTruncated(call.name)));
    h.append(finalised.message);
    return finalised.message;
  });
  return { results, terminate: false };
}

/** One call after another, each finished before the next starts; stops at an abort. Results go into `done`. */
async function sequentialBatch(
  h: ToolBatchHost,
  calls: ToolCall[],
  assistantIndex: number,
  done: Map<string, Finalised>,
  summaries: ToolSummaries,
): Promise<Suspend | void> {
  for (const call of calls) {
    start(h, call);
    const outcome = await prepareAndExecute(h, call, assistantIndex, summaries);
    if (outcome === SUSPEND) return SUSPEND;
    const finalised = settleCall(h, call, outcome);
    h.append(finalised.message);
    done.set(call.id, { ...finalised, recorded: true });
    if (h.abort) break;
  }
}

/** A batch of one call (`sequentialBatch` of one): its result recorded as it finishes, then `finish`, in one `then`. */
function oneCall(
  h: ToolBatchHost,
  call: ToolCall,
  assistantIndex: number,
  done: Map<string, Finalised>,
  summaries: ToolSummaries,
  finish: (outcome: Suspend | void) => BatchResult,
): Promise<BatchResult> {
  start(h, call);
  return prepareAndExecute(h, call, assistantIndex, summaries, (outcome) => {
    if (outcome === SUSPEND) return finish(SUSPEND);
    const finalised = settleCall(h, call, outcome);
    h.append(finalised.message);
    done.set(call.id, { ...finalised, recorded: true });
    return finish();
  });
}

/** Prepares the known calls in one activity, settles the unknown and immediate ones, then overlaps the executions. */
async function parallelBatch(
  h: ToolBatchHost,
  calls: ToolCall[],
  assistantIndex: number,
  finalised: Map<string, Finalised>,
  summaries: ToolSummaries,
): Promise<Suspend | void> {
  const prepared = await prepareKnown(h, calls, assistantIndex);
  const deferred: { call: ToolCall; args?: unknown; argsDigest?: string }[] = [];
  for (const call of calls) {
    const info = toolInfo(h.tools, call.name);
    const p = info ? prepared.get(call.id) : undefined;
    if (info && !p) break; // preparation stopped at an abort: later calls get no events and no result
    start(h, call);
    if (!p || p.status === 'immediate') {
      finalised.set(
        call.id,
        settleCall(h, call, p?.status === 'immediate' ? p.outcome : loopErrorOutcome(unknownToolText(h, call.name))),
      );
    } else deferred.push({ call, args: p.args, ...(p.status === 'approval' ? { argsDigest: p.argsDigest } : {}) });
  }
  // executions overlap (a call needing approval waits meanwhile); each tool_execution_end is emitted as its call completes
  return overlap(h, deferred, assistantIndex, finalised, summaries);
}

/** Runs the calls concurrently; SUSPEND when some call was suspended awaiting approval (the others finished). */
async function overlap(
  h: ToolBatchHost,
  calls: { call: ToolCall; args?: unknown; argsDigest?: string }[],
  assistantIndex: number,
  finalised: Map<string, Finalised>,
  summaries: ToolSummaries,
): Promise<Suspend | void> {
  let suspended = false;
  await Promise.all(
    calls.map(async ({ call, args, argsDigest }) => {
      const outcome = h.abort
        ? loopErrorOutcome(OPERATION_ABORTED)
        : argsDigest !== undefined
          ? await approveThenExecute(h, call, assistantIndex, args, argsDigest, summaries)
          : await execute(h, call, assistantIndex, args, summaries);
      if (outcome === SUSPEND) suspended = true;
      else finalised.set(call.id, settleCall(h, call, outcome));
    }),
  );
  return suspended ? SUSPEND : undefined;
}

/**
 * A batch carried across continue-as-new: the finished calls keep their outcomes, the calls awaiting approval wait
 * again (concurrently, their deadlines unchanged), then calls never started run one after another (a sequential batch
 * suspended at its pending call). A resumed run continues-as-new again only after history grew by another
 * `continueAsNewAfterBytes`, so a large carried state cannot loop.
 */
async function resumedBatch(
  h: ToolBatchHost,
  calls: ToolCall[],
  assistantIndex: number,
  resume: SuspendedBatch,
  done: Map<string, Finalised>,
): Promise<Suspend | void> {
  h.continueAsNewRetryAt = workflowInfo().historySize + (h.config.continueAsNewAfterBytes ?? 8 * 1024 * 1024);
  for (const call of calls)
    if (resume.done[call.id])
      done.set(call.id, { message: toolResultMessage(call, resume.done[call.id]), outcome: resume.done[call.id] });
  const waiting = calls.flatMap((call) => {
    const p = h.isPending(call.id, assistantIndex);
    return p ? [{ call, args: p.args, argsDigest: p.argsDigest }] : [];
  });
  if ((await overlap(h, waiting, assistantIndex, done, undefined)) === SUSPEND) return SUSPEND;
  recordInOrder(h, calls, done);
  if (h.abort) return;
  return sequentialBatch(
    h,
    calls.filter((c) => !done.has(c.id)),
    assistantIndex,
    done,
    undefined,
  );
}

function start(h: ToolBatchHost, call: ToolCall): void {
  h.emit({
    type: 'tool_execution_start',
    toolCallId: call.id,
    toolName: call.name,
    args: call.arguments,
    ...childOf(h, call),
  });
}

/** `{ childWorkflowId }` of a sub-agent call that started (or attached to) its child run, from its result's details. */
function startedChild(outcome: ToolOutcome): { childWorkflowId?: string } {
  const id = (outcome.details as { childWorkflowId?: unknown } | undefined)?.childWorkflowId;
  return typeof id === 'string' ? { childWorkflowId: id } : {};
}

/** `{ childWorkflowId }` for a sub-agent call (the id its child run gets when it starts), else nothing. */
function childOf(h: ToolBatchHost, call: ToolCall): { childWorkflowId?: string } {
  return toolInfo(h.tools, call.name)?.agent ? { childWorkflowId: h.tree.childId(call) } : {};
}

/** Settles one tool call: emits its `tool_execution_end` and builds its result message (appended in source order). */
function settleCall(h: ToolBatchHost, call: ToolCall, outcome: ToolOutcome): Finalised {
  h.emit({
    type: 'tool_execution_end',
    toolCallId: call.id,
    toolName: call.name,
    result: { content: outcome.content, details: outcome.details, ...(outcome.terminate ? { terminate: true } : {}) },
    isError: outcome.isError,
    ...startedChild(outcome),
  });
  return { message: toolResultMessage(call, outcome), outcome };
}
