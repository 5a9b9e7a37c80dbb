/**
 * One tool call's activities (docs/architecture.md#tool-calls): the preparation of a parallel batch's known calls (one
 * activity, source order), a sequential call prepared and executed in one activity, an execution; and the approval
 * hand-off between preparation and execution. Where each activity runs is tool-placement.ts's job.
 */

import { OPERATION_ABORTED, toolNotEnabled, toolNotFound } from '../../common/errors.js';
import type { ToolCall } from '../../common/messages.js';
import type { ReplayRef } from '../../common/replay.js';
import { carriedCall } from '../../common/transcript-tail.js';
import type { ApprovalRecord } from '../../common/updates.js';
import type { PreparedCall, RunRef, SubAgentRecord, ToolCallRef, ToolInfo, ToolOutcome } from '../../common/wire.js';
import type { RunTree } from '../tree/context.js';
import { subAgentCallsSince08 } from '../tree/sub-agent.js';
import {
  localPreparationOptions,
  localToolActivities,
  toolActivities,
  toolActivityOptions,
  toolSummary,
} from '../activities.js';
import { preparationFailureText } from '../failure-outcomes.js';
import { PATCH } from '../patches.js';
import type { ApprovalWait } from './approvals.js';
import { preparedForReplay } from './replay-calls.js';
import { dispatch, onToolQueue, type ToolPlacement } from './tool-placement.js';
import { loopErrorOutcome } from './tool-tracking.js';
import { since } from '../since.js';

/** What a call's activities need of the session, besides placing them: tools, transcript position, approvals. */
export interface ToolCallHost extends ToolPlacement {
  readonly tools: ToolInfo[];
  readonly run: RunRef;
  /** This run's place in a sub-agent tree: a sub-agent call runs through it. */
  readonly tree: RunTree;
  /** `digests[i]`: digest of transcript[0, i), sent with activity inputs (common/transcript-digest.ts). */
  readonly digests: number[];
  /** The worker's tools the run did not enable (`startRun`, from 0.6.3). */
  readonly otherTools?: string[];
  /** Waits for the decision on a prepared call needing approval (workflows/agent/approvals.ts). */
  awaitApproval(call: ToolCall, assistantIndex: number, args: unknown, argsDigest: string): Promise<ApprovalWait>;
  /** A replaying run (input `replay`): what its tool activities get to serve `calls` from the record. */
  replayAt?(assistantIndex: number, calls: readonly ToolCall[]): ReplayRef | undefined;
}

/** `{ replay }` for a replaying run's activity input (an input payload, not a command: no patch), else nothing. */
function replayField(h: ToolCallHost, assistantIndex: number, calls: readonly ToolCall[]): { replay?: ReplayRef } {
  const replay = h.replayAt?.(assistantIndex, calls);
  return replay ? { replay } : {};
}

/** Activity summaries of one assistant message's tool calls, by call id (from `callModel`; none for a resumed batch). */
export type ToolSummaries = Record<string, string> | undefined;

/** A call left awaiting approval: continue-as-new carries it (workflows/agent/tool-batch.ts suspends the batch). */
export const SUSPEND = Symbol('suspend');
export type Suspend = typeof SUSPEND;

export function toolInfo(tools: ToolInfo[], name: string): ToolInfo | undefined {
  return tools.find((t) => t.name === name);
}

/** The result text of a call of a tool the run does not have: not enabled for it (a worker's tool), or not found. */
export function unknownToolText(h: Pick<ToolCallHost, 'otherTools'>, name: string): string {
  return h.otherTools?.includes(name) ? toolNotEnabled(name) : toolNotFound(name);
}

/**
 * One activity prepares every known call, strictly in source order; it stops early when the run is aborted. A local
 * activity when every call is placed locally (preparation reads only the transcript, any worker may do it).
 */
export async function prepareKnown(
  h: ToolCallHost,
  calls: ToolCall[],
  assistantIndex: number,
): Promise<Map<string, PreparedCall>> {
  const byId = new Map<string, PreparedCall>();
  if (h.abort) return byId;
  // 0.8.0: a direct sub-agent call the workflow validates needs no preparation (nothing on the worker sees it first)
  for (const c of calls) if (directSubAgentCall(h, c)) byId.set(c.id, { toolCallId: c.id, status: 'runnable' });
  const known = calls.filter((c) => toolInfo(h.tools, c.name) && !byId.has(c.id));
  if (known.length === 0) return byId;
  const input = {
    run: h.run,
    assistantIndex,
    digest: h.digests[assistantIndex + 1],
    calls: known.map((c) => ({ toolCallId: c.id, toolName: c.name, ...carriedCall(c) })),
    metadata: h.config.metadata ?? {},
    ...replayField(h, assistantIndex, known),
  };
  const summary = preparationSummary(h, known);
  const local = known.every((c) => toolInfo(h.tools, c.name)?.localActivity) && since(PATCH.localTools);
  try {
    const list = await h.runCancellable(() =>
      local
        ? localToolActivities.prepareToolCalls.executeWithOptions(
            { ...localPreparationOptions(summary), retry: { maximumAttempts: 3 } },
            [input],
          )
        : toolActivities.prepareToolCalls.executeWithOptions(
            {
              ...toolActivityOptions(h.config, undefined, summary),
              retry: { maximumAttempts: 3 },
              ...onToolQueue(),
            },
            [input],
          ),
    );
    for (const p of list) byId.set(p.toolCallId, p);
  } catch (err) {
    const text = preparationFailureText(err);
    if (text !== undefined)
      for (const c of known) byId.set(c.id, { toolCallId: c.id, status: 'immediate', outcome: loopErrorOutcome(text) });
  }
  return byId;
}

/**
 * One call in one activity; a call needing approval is only prepared there, and executed once approved. `next`: what
 * the caller does with the outcome, run in the activity's own `then` (no async function awaiting: the caller resumed
 * in the same microtask, no promise more per call).
 */
export function prepareAndExecute<R = ToolOutcome | Suspend>(
  h: ToolCallHost,
  call: ToolCall,
  assistantIndex: number,
  summaries: ToolSummaries,
  next: (outcome: ToolOutcome | Suspend) => R | PromiseLike<R> = (outcome) => outcome as R,
): Promise<R> {
  const info = toolInfo(h.tools, call.name);
  if (!info) return Promise.resolve(loopErrorOutcome(unknownToolText(h, call.name))).then(next);
  if (h.abort) return Promise.resolve(loopErrorOutcome(OPERATION_ABORTED)).then(next);
  if (isSubAgent(info)) return prepareThenStartChild(h, call, assistantIndex, info, summaries).then(next);
  const ref = callRef(h, call, assistantIndex);
  return dispatch(
    h,
    call,
    info,
    approvalSummary(info, toolCallSummary(summaries, call, call.arguments)),
    (options, placed) => toolActivities.runToolCall.executeWithOptions(options, [placed ? { ...ref, ...placed } : ref]),
    (options, home) => localToolActivities.runToolCall.executeWithOptions(options, [{ ...ref, ...home }]),
    (result) => {
      if (!('prepared' in result)) return next(result);
      return result.prepared === 'approval'
        ? approveThenExecute(h, call, assistantIndex, result.args, result.argsDigest, summaries).then(next)
        : next(result.outcome);
    },
  );
}

/** Waits for the approval of a prepared call, then executes it; a refusal is the call's error result. */
export async function approveThenExecute(
  h: ToolCallHost,
  call: ToolCall,
  assistantIndex: number,
  args: unknown,
  argsDigest: string,
  summaries: ToolSummaries,
): Promise<ToolOutcome | Suspend> {
  const wait = await h.awaitApproval(call, assistantIndex, args ?? call.arguments, argsDigest);
  if (wait.kind === 'suspend') return SUSPEND;
  if (wait.kind === 'refused') return wait.outcome;
  return h.abort ? loopErrorOutcome(OPERATION_ABORTED) : execute(h, call, assistantIndex, args, summaries, wait.record);
}

/** Executes a prepared call (`args`: as prepared; `approval`: the decision that let it run). */
export async function execute(
  h: ToolCallHost,
  call: ToolCall,
  assistantIndex: number,
  args: unknown,
  summaries: ToolSummaries,
  approval?: ApprovalRecord,
): Promise<ToolOutcome> {
  const info = toolInfo(h.tools, call.name);
  if (info && isSubAgent(info)) return h.tree.runSubAgent(h, call, info, args ?? call.arguments);
  const input = {
    ...callRef(h, call, assistantIndex),
    ...(args === undefined ? {} : { args }),
    ...(approval ? { approval } : {}),
  };
  return dispatch(
    h,
    call,
    info,
    approvedSummary(toolCallSummary(summaries, call, args ?? call.arguments), approval),
    (options, placed) =>
      toolActivities.executeToolCall.executeWithOptions(options, [placed ? { ...input, ...placed } : input]),
    (options, home) => localToolActivities.executeToolCall.executeWithOptions(options, [{ ...input, ...home }]),
    (result) => result,
  );
}

/**
 * A sub-agent call whose child starts without the preparation activity (0.8.0, RunTree.direct); the run's record of
 * the sub-agent is read first, so a run started before 0.8.0 (no `direct`) asks no patch here. A replaying run's call
 * is prepared (0.11.0, replay-calls.ts).
 */
function directSubAgentCall(h: ToolCallHost, call: ToolCall): boolean {
  const info = toolInfo(h.tools, call.name);
  return info?.agent?.direct === true && startsDirectly(h, call, info as ToolInfo & { agent: SubAgentRecord });
}

/** A direct call starts its child at once, unless the run replays (0.11.0: prepared, to be served from the record). */
function startsDirectly(h: ToolCallHost, call: ToolCall, info: ToolInfo & { agent: SubAgentRecord }): boolean {
  return h.tree.direct(call, info) && !preparedForReplay(h.config);
}

/**
 * A call of a sub-agent (README "Sub-agents"): a child run instead of a tool activity (from 0.6.0). A run that has the
 * 0.8.0 sub-agent calls (`PATCH.subAgentCalls`, which implies `subAgents`; itself implied by 0.12.0's
 * `leanSubAgentStart`) records no `subAgents` marker.
 */
function isSubAgent(info: ToolInfo): info is ToolInfo & { agent: SubAgentRecord } {
  return info.agent !== undefined && (subAgentCallsSince08() || since(PATCH.subAgents));
}

/**
 * A sub-agent call of a sequential batch: prepared (validation, hooks, approval) in one activity, then its child run;
 * since 0.8.0 a direct call the workflow validates itself starts its child at once (RunTree.direct), except in a
 * replaying run (0.11.0: the preparation serves it from the record, replay-calls.ts).
 */
async function prepareThenStartChild(
  h: ToolCallHost,
  call: ToolCall,
  assistantIndex: number,
  info: ToolInfo & { agent: SubAgentRecord },
  summaries: ToolSummaries,
): Promise<ToolOutcome | Suspend> {
  if (startsDirectly(h, call, info)) return h.tree.runSubAgent(h, call, info, call.arguments);
  const p = (await prepareKnown(h, [call], assistantIndex)).get(call.id);
  if (!p) return loopErrorOutcome(OPERATION_ABORTED);
  if (p.status === 'immediate') return p.outcome;
  if (p.status === 'approval') return approveThenExecute(h, call, assistantIndex, p.args, p.argsDigest, summaries);
  return h.abort ? loopErrorOutcome(OPERATION_ABORTED) : h.tree.runSubAgent(h, call, info, p.args ?? call.arguments);
}

/** The activity summary of a call: the tool's own (computed by `callModel` with the tool's `summary`), else a generic one. */
function toolCallSummary(summaries: ToolSummaries, call: ToolCall, args: unknown): string {
  return summaries?.[call.id] ?? toolSummary(call.name, args);
}

/**
 * The Web UI's label of a call prepared and, unless it needs approval, executed in one activity (issue 33 item 16: a
 * call that only waits was shown as a completed `runToolCall • deploy web`): `prepare deploy web (needs approval)`
 * for a tool whose every call waits, `deploy web (may need approval)` when a predicate or hook decides. User metadata,
 * not a command: no patch (docs/versioning.md).
 */
function approvalSummary(info: ToolInfo, summary: string): string {
  if (info.approval === 'always') return `prepare ${summary} (needs approval)`;
  return info.approval === 'conditional' ? `${summary} (may need approval)` : summary;
}

/** The label of a parallel batch's preparation: `prepare 3 tool calls`, `… (1 needs approval)` when some always wait. */
function preparationSummary(h: ToolCallHost, known: ToolCall[]): string {
  const waiting = known.filter((c) => toolInfo(h.tools, c.name)?.approval === 'always').length;
  const approvals = waiting === 0 ? '' : ` (${waiting} ${waiting === 1 ? 'needs' : 'need'} approval)`;
  return `prepare ${known.length} tool calls${approvals}`;
}

/** The label of an execution a decision let run: `deploy web (approved by alice)`. */
function approvedSummary(summary: string, approval: ApprovalRecord | undefined): string {
  return approval ? `${summary} (approved by ${approval.approver})` : summary;
}

function callRef(h: ToolCallHost, call: ToolCall, assistantIndex: number): ToolCallRef {
  return {
    run: h.run,
    assistantIndex,
    digest: h.digests[assistantIndex + 1],
    toolCallId: call.id,
    toolName: call.name,
    ...carriedCall(call), // an input payload, not a command: no patch (docs/versioning.md)
    metadata: h.config.metadata ?? {},
    ...replayField(h, assistantIndex, [call]),
  };
}
