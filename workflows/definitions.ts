/**
 * Signals and queries of `agentWorkflow`. The client imports these definitions; other languages use the names.
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import type { EventsPage } from '../common/events.js';
import type { AgentRunState, IncomingMessage, MessagesPage } from '../common/run.js';

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

/** Stop at the next boundary because a budget above the run's (a batch's) is spent: no further model call; the run ends `stopped` with this text as `error`. */
export const budgetStopSignal = defineSignal<[string]>('budgetStop');

export const stateQuery = defineQuery<AgentRunState>('state');
export const messagesQuery = defineQuery<MessagesPage, [{ from?: number; limit?: number }?]>('messages');
export const eventsQuery = defineQuery<EventsPage, [{ after?: number; limit?: number }?]>('events');
