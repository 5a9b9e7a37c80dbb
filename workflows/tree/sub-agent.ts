/**
 * A sub-agent call (README "Sub-agents", docs/architecture.md#sub-agents): the tool call of a sub-agent the run recorded
 * at its start (`ToolInfo.agent`) starts a child `agentWorkflow` — workflow id `<parentWorkflowId>-<toolCallId>`, parent
 * close policy REQUEST_CANCEL, the `keelTree` memo (common/tree/membership.ts), the parent's task queue — and its final text (or
 * its `output`, checked by the `checkSubAgentOutput` local activity) is the call's result. The child is started in the
 * run's activity scope, so an `interrupt` or `cancel` of the parent (and Temporal cancellation) cancels it, and
 * through it its own children and in-flight model requests; a child that fails or is cancelled gives an error result.
 */
import {
  ChildWorkflowCancellationType,
  isCancellation,
  ParentClosePolicy,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { ToolCall } from '../../common/messages.js';
import type { AgentRunInput, AgentRunResult } from '../../common/run.js';
import {
  boundedTools,
  childWorkflowId,
  inheritedModelOptions,
  subAgentCancelled,
  subAgentFailed,
  subAgentPrompt,
  subAgentStopped,
  subAgentTooDeep,
} from '../../common/tree/sub-agents.js';
import { TREE_MEMO_KEY, type TreeMembership } from '../../common/tree/membership.js';
import { startSearchAttributes } from '../../common/search-attributes.js';
import { plainlyValid } from '../../common/tree/plain-arguments.js';
import type { SubAgentRecord, ToolInfo, ToolOutcome } from '../../common/wire.js';
import { localSetupActivities, subAgentActivities } from '../activities.js';
import { childRunOutcome } from '../failure-outcomes.js';
import { PATCH } from '../patches.js';
import { workflowNow } from '../clock.js';
import { batchMembership } from '../batch-protocol.js';
import type { RunConfig } from '../agent/state.js';
import { loopErrorOutcome, type ToolTracking } from '../agent/tool-tracking.js';
import { treeMembership } from './membership.js';
import { since } from '../since.js';

/** What a sub-agent call needs of the session: its config and the running-tools tracking. */
export interface SubAgentHost extends ToolTracking {
  readonly config: RunConfig;
}

/** The memo to carry across this run's continue-as-new: its place in a tree (`{}` for a root run). */
export function treeMemo(): Record<string, unknown> {
  const t = treeMembership();
  return t ? { [TREE_MEMO_KEY]: t } : {};
}

/** The child run's workflow id for a call of this run. */
export function subAgentChildId(call: ToolCall): string {
  return childWorkflowId(workflowInfo().workflowId, call.id);
}

/**
 * The child's place in the tree: a child of this run, one level deeper. A batch's task has its batch as root. When
 * this run is not the root and has a budget of its own (`budgeted`), it joins the child's `budgetedAncestors`.
 * `toolBound` (0.6.3): the tools the child's tree allows, carried down in the memo. `withRootBudget` (0.8.0): the memo
 * says whether the root keeps a budget (`rootBudgeted`).
 */
export function childMembership(
  call: ToolCall,
  budgeted: boolean,
  toolBound?: string[],
  withRootBudget = false,
): TreeMembership {
  const own = treeMembership();
  const parentWorkflowId = workflowInfo().workflowId;
  const rootWorkflowId = own?.rootWorkflowId ?? batchMembership()?.workflowId ?? parentWorkflowId;
  const budgetedAncestors = [
    ...(own?.budgetedAncestors ?? []),
    ...(budgeted && parentWorkflowId !== rootWorkflowId ? [parentWorkflowId] : []),
  ];
  return {
    rootWorkflowId,
    parentWorkflowId,
    toolCallId: call.id,
    depth: (own?.depth ?? 0) + 1,
    path: [...(own?.path ?? []), `${call.name} › ${call.id}`],
    ...(budgetedAncestors.length ? { budgetedAncestors } : {}),
    ...(toolBound ? { tools: toolBound } : {}),
    ...(withRootBudget ? rootBudgeted(own, budgeted) : {}),
  };
}

/**
 * Whether the child's tree root keeps a budget: this run's (`budgeted`) when it is the root, its batch's ledger when it
 * is a batch's task, else what its own memo says (absent in a memo set before 0.8.0: stays absent, taken as true).
 */
function rootBudgeted(own: TreeMembership | undefined, budgeted: boolean): Pick<TreeMembership, 'rootBudgeted'> {
  if (own) return own.rootBudgeted === undefined ? {} : { rootBudgeted: own.rootBudgeted };
  const batch = batchMembership();
  return { rootBudgeted: batch ? batch.treeBudget === true : budgeted };
}

/**
 * Whether a sub-agent call starts its child without the preparation activity (0.8.0, `PATCH.subAgentCalls`): the run
 * recorded the sub-agent as `direct` (nothing on the worker sees a call first) and the call's arguments parsed and are
 * plainly valid against its schema (common/tree/plain-arguments.ts); any other call is prepared by the activity, whose
 * texts are the only validation errors. The patch is asked only for such a call.
 */
export function directCall(call: ToolCall, agent: SubAgentRecord): boolean {
  return (
    agent.direct === true &&
    call.argumentsError === undefined &&
    plainlyValid(agent.parameters, call.arguments) &&
    subAgentCallsSince08()
  );
}

/**
 * Whether this run starts its children lean (0.12.0, `PATCH.leanSubAgentStart`): the memo's `leanStart` and the child's
 * search attributes in its start (workflows/agent/features.ts says what the child then skips).
 */
export function leanChildren(): boolean {
  return since(PATCH.leanSubAgentStart);
}

/** The 0.8.0 sub-agent calls (`PATCH.subAgentCalls`), implied by 0.12.0's lean start: a run that has it asks neither. */
export function subAgentCallsSince08(): boolean {
  return leanChildren() || since(PATCH.subAgentCalls);
}

/** What a sub-agent's child is started with since 0.6.3: inherited model options, its tools within the tree's bound. */
export interface ChildStart {
  modelOptions?: AgentRunInput['modelOptions'];
  /** The child's tools and the bound its memo carries. */
  bounded?: { tools: string[]; bound: string[] };
}

/**
 * Since 0.6.3 (each behind its patch, asked only when a child is started; implied by the 0.8.0 `subAgentCalls`, so a
 * run that has it records neither marker): the child gets the caller's `modelOptions` under the definition's, option
 * by option, and only the tools of its definition that its tree's bound allows — the bound this run's memo carries,
 * else this run's own `tools` (README "Sub-agents").
 */
export function childStart(config: RunConfig, agent: SubAgentRecord): ChildStart {
  const since08 = subAgentCallsSince08();
  const modelOptions =
    since08 || since(PATCH.subAgentModelOptions)
      ? inheritedModelOptions(config.modelOptions, agent.modelOptions)
      : undefined;
  const bounded =
    since08 || since(PATCH.subAgentToolBound)
      ? boundedTools(agent.tools, treeMembership()?.tools ?? config.tools ?? [], agent.ownTools === true)
      : undefined;
  return { ...(modelOptions ? { modelOptions } : {}), ...(bounded ? { bounded } : {}) };
}

/**
 * The child run's input: the agent's prompt, tools and limits; the caller's model unless the agent names its own; the
 * caller's labels (`metadata`), model retry, heartbeat timeout and history limits; what `start` adds (0.6.3).
 */
export function childInput(
  config: RunConfig,
  agent: SubAgentRecord,
  args: unknown,
  start: ChildStart = {},
): AgentRunInput {
  return {
    model: agent.model ?? config.model,
    ...childFallbackModels(config, agent),
    prompt: subAgentPrompt(args, agent.typedInput === true),
    systemPrompt: agent.systemPrompt,
    tools: start.bounded?.tools ?? agent.tools,
    mode: 'task',
    ...(start.modelOptions ? { modelOptions: start.modelOptions } : {}),
    ...(agent.maxTurns !== undefined ? { maxTurns: agent.maxTurns } : {}),
    ...(agent.budget !== undefined ? { budget: agent.budget } : {}),
    ...(config.metadata !== undefined ? { metadata: config.metadata } : {}),
    ...(config.modelRetry !== undefined ? { modelRetry: config.modelRetry } : {}),
    ...(config.heartbeatTimeout !== undefined ? { heartbeatTimeout: config.heartbeatTimeout } : {}),
    ...(config.continueAsNewAfterBytes !== undefined
      ? { continueAsNewAfterBytes: config.continueAsNewAfterBytes }
      : {}),
    ...(config.maxHistoryBytes !== undefined ? { maxHistoryBytes: config.maxHistoryBytes } : {}),
  };
}

/** The child's `fallbackModels`: the agent's own, else the caller's when the child runs the caller's model. */
function childFallbackModels(config: RunConfig, agent: SubAgentRecord): { fallbackModels?: string[] } {
  const models = agent.fallbackModels ?? (agent.model === undefined ? config.fallbackModels : undefined);
  return models?.length ? { fallbackModels: models } : {};
}

const MAX_SUMMARY = 200;

function clipLine(text: string, max: number): string {
  const first = text.split('\n', 1)[0];
  return first.length > max ? `${first.slice(0, max - 1)}…` : first;
}

/**
 * Runs a sub-agent call (its arguments validated): refused past the depth limit, else a child run whose result becomes
 * the call's. What this run's `startRun` said of its worker: `searchAttributes`, the namespace has Keel's, so a lean
 * child's start sets them; `local`, it runs local activities (it caches workflows), so children may start lean. Never throws: every failure, cancellation included, is the call's error result.
 */
export async function runSubAgent(
  h: SubAgentHost,
  call: ToolCall,
  info: ToolInfo & { agent: SubAgentRecord },
  args: unknown,
  worker: { searchAttributes: boolean; local: boolean },
): Promise<ToolOutcome> {
  const agent = info.agent;
  const depth = childMembership(call, false).depth;
  if (depth > agent.maxDepth) return loopErrorOutcome(subAgentTooDeep(call.name, depth, agent.maxDepth));
  const start = childStart(h.config, agent);
  // the lean marker is asked either way (it implies the 0.8.0 calls); a worker that caches no workflow runs no local
  // activity, so its children start as before 0.12.0 (0.12.0)
  const lean = leanChildren() && worker.local;
  const membership = {
    ...childMembership(call, h.config.budget !== undefined, start.bounded?.bound, subAgentCallsSince08()),
    ...(lean ? { leanStart: true } : {}),
  };
  const id = subAgentChildId(call);
  const input = childInput(h.config, agent, args, start);
  const task = typeof input.prompt === 'string' ? input.prompt : '';
  h.runningTools.set(call.id, { toolName: call.name, since: workflowNow() });
  h.publishDetails();
  let result: AgentRunResult | undefined;
  let failure: unknown;
  try {
    result = await h.runCancellable(() =>
      startChild<(i: AgentRunInput) => Promise<AgentRunResult>>('agentWorkflow', {
        workflowId: id,
        args: [input],
        taskQueue: workflowInfo().taskQueue,
        memo: { [TREE_MEMO_KEY]: membership },
        ...(lean && worker.searchAttributes ? { typedSearchAttributes: startSearchAttributes(input.model) } : {}),
        parentClosePolicy: ParentClosePolicy.REQUEST_CANCEL,
        cancellationType: ChildWorkflowCancellationType.WAIT_CANCELLATION_COMPLETED,
        staticSummary: clipLine(`sub-agent ${call.name}: ${task}`, MAX_SUMMARY),
        staticDetails: [
          `**sub-agent** ${call.name} · tool call ${call.id} of ${membership.parentWorkflowId}`,
          `**tree** ${membership.path.join(' / ')} · depth ${membership.depth} · root ${membership.rootWorkflowId}`,
          `**model** ${input.model}`,
          '',
          '**task**',
          '',
          task.length > 2000 ? `${task.slice(0, 1999)}…` : task,
        ].join('\n'),
      }).then(
        (child) => child.result(),
        (err: unknown) =>
          err instanceof WorkflowExecutionAlreadyStartedError ? attach(h, call, id) : Promise.reject(err),
      ),
    );
  } catch (err) {
    failure = err;
  } finally {
    h.runningTools.delete(call.id);
    h.publishDetails();
  }
  return childToolOutcome(h, call, agent, id, result, failure);
}

/** Marks a run that `attach` found closed without a result: its text is the error result. */
class ClosedWithout extends Error {
  constructor(
    readonly closed: 'cancelled' | 'failed',
    message: string,
  ) {
    super(message);
  }
}

/**
 * The child id is taken by a running run (this call's start was retried, e.g. after a reset): the call attaches to it
 * instead of starting a second one (activity `awaitSubAgentRun`, cancelled with the call, which cancels the run).
 */
async function attach(h: SubAgentHost, call: ToolCall, id: string): Promise<AgentRunResult> {
  const awaited = await subAgentActivities.awaitSubAgentRun.executeWithOptions(
    {
      startToCloseTimeout: '3650d',
      heartbeatTimeout: '30s',
      summary: `attach to sub-agent ${call.name} run ${id}`,
    },
    [{ workflowId: id }],
  );
  if ('result' in awaited) return awaited.result;
  throw new ClosedWithout(awaited.closed, awaited.error);
}

/** The tool result of a finished sub-agent run: its output (checked against the agent's schema) or why it has none. */
async function childToolOutcome(
  h: SubAgentHost,
  call: ToolCall,
  agent: SubAgentRecord,
  id: string,
  result: AgentRunResult | undefined,
  failure: unknown,
): Promise<ToolOutcome> {
  const details = { childWorkflowId: id };
  if (failure instanceof ClosedWithout) {
    const text =
      failure.closed === 'cancelled'
        ? subAgentCancelled(call.name, id)
        : subAgentFailed(call.name, id, failure.message);
    return { ...loopErrorOutcome(text), details };
  }
  if (!result || result.status !== 'completed') {
    const o = childRunOutcome(result, failure);
    const text =
      o.status === 'cancelled'
        ? subAgentCancelled(call.name, id)
        : o.status === 'stopped'
          ? subAgentStopped(call.name, id, o.error ?? 'stopped')
          : subAgentFailed(call.name, id, o.error ?? 'failed');
    return { ...loopErrorOutcome(text), details };
  }
  const text = result.finalText;
  if (!agent.output) return { content: [{ type: 'text', text }], details, isError: false, timestamp: workflowNow() };
  let checked;
  try {
    checked = await h.runCancellable(() =>
      localSetupActivities.checkSubAgentOutput.executeWithOptions(
        { summary: `check ${call.name} output`, retry: { maximumAttempts: 3 } },
        [{ name: call.name, text, schema: agent.output! }],
      ),
    );
  } catch (err) {
    const text = isCancellation(err)
      ? subAgentCancelled(call.name, id)
      : subAgentFailed(call.name, id, `its output could not be checked: ${(err as Error).message}`);
    return { ...loopErrorOutcome(text), details };
  }
  if (!checked.ok) return { ...loopErrorOutcome(checked.error), details };
  return {
    content: [{ type: 'text', text }],
    details: { ...details, output: checked.value },
    isError: false,
    timestamp: workflowNow(),
  };
}
