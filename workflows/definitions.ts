/**
 * Signals, Updates and queries of `agentWorkflow`. The client imports these definitions; other languages use the names.
 * `followUp`, `steer`, `interrupt`, `end` and `cancel` are both a signal (fire and forget) and an Update of the same
 * name (validated, acknowledged); the SDK keeps the two kinds apart.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { EventsPage } from '../common/events.js';
import type { McpToolRecord, SubAgentRecord } from '../common/wire.js';
import type { AgentRunState, IncomingMessage, MessagesPage } from '../common/run.js';
import type { ApprovalDecisionInput, ApprovalRecord, ClosedAck, InterruptAck, QueuedAck } from '../common/updates.js';
import type { TreeApprovalsReport } from '../common/tree/approvals.js';
import type { ForkBase } from '../common/fork.js';

/** Queue a message for when the agent would otherwise stop (Pi `followUp`). Starts a new agent run in a waiting session. */
export const followUpSignal = defineSignal<[IncomingMessage | IncomingMessage[]]>('followUp');
/** Queue a message injected after the current turn's tool batch (Pi `steer`). */
export const steerSignal = defineSignal<[IncomingMessage | IncomingMessage[]]>('steer');
/** Abort the current agent run at the next boundary; a session then waits for input, a task ends `stopped`. */
export const interruptSignal = defineSignal<[]>('interrupt');
/** Abort the current agent run and end the workflow as Canceled. */
export const cancelSignal = defineSignal<[string?]>('cancel');

/** Finish a session once it is idle: the workflow completes with status `completed` (a running agent run ends first). */
export const endSignal = defineSignal<[]>('end');

/** No-op for a busy run; an idle session checks for a new current deployment version and moves to it (deploys). */
export const wakeSignal = defineSignal<[]>('wake');
/** Stop at the next boundary because a budget above the run's (a batch's) is spent: no further model call; the run ends `stopped` with this text as `error`. */
export const budgetStopSignal = defineSignal<[string]>('budgetStop');
/**
 * Sub-agent → its tree's root (README "Sub-agents", one approval desk): the sub-agent's calls awaiting approval now,
 * and those decided since its last report; the root lists them in `state().pendingApprovals` with `workflowId` and `path`.
 */
export const treeApprovalsSignal = defineSignal<[TreeApprovalsReport]>('keelTreeApprovals');

export const stateQuery = defineQuery<AgentRunState>('state');
export const messagesQuery = defineQuery<MessagesPage, [{ from?: number; limit?: number }?]>('messages');
export const eventsQuery = defineQuery<EventsPage, [{ after?: number; limit?: number }?]>('events');
/** The MCP tools the run recorded at its start (their schemas): a worker that did not run `startRun` reads them here. */
export const mcpToolsQuery = defineQuery<McpToolRecord[]>('mcpTools');
/** The sub-agents the run recorded at its start (README "Sub-agents"), each with its tool name. */
export const subAgentsQuery = defineQuery<(SubAgentRecord & { name: string })[]>('subAgents');
/** What a fork of the run needs besides the transcript (common/fork.ts), in one snapshot. */
export const forkBaseQuery = defineQuery<ForkBase>('forkBase');

/** Update `followUp`: as the signal; refuses a malformed message or a closed run; answers the queue lengths. */
export const followUpUpdate = defineUpdate<QueuedAck, [IncomingMessage | IncomingMessage[]]>('followUp');
/** Update `steer`: as the signal; refuses a malformed message or a closed run; answers the queue lengths. */
export const steerUpdate = defineUpdate<QueuedAck, [IncomingMessage | IncomingMessage[]]>('steer');
/** Update `interrupt`: as the signal; answers whether an agent run was running. */
export const interruptUpdate = defineUpdate<InterruptAck, []>('interrupt');
/** Update `end`: as the signal; answers the final status once the run has closed. */
export const endUpdate = defineUpdate<ClosedAck, []>('end');
/** Update `cancel`: as the signal; answers the final status (`cancelled`) once the run has closed. */
export const cancelUpdate = defineUpdate<ClosedAck, [string?]>('cancel');
/** Update `approve`: let a tool call awaiting approval run (README "Approvals"). */
export const approveUpdate = defineUpdate<ApprovalRecord, [ApprovalDecisionInput]>('approve');
/** Update `deny`: give a tool call awaiting approval the denied error result. */
export const denyUpdate = defineUpdate<ApprovalRecord, [ApprovalDecisionInput]>('deny');
