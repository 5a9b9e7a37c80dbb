/**
 * What a counterfactual replay reads of a run (docs/runs.md#counterfactual-replay): the messages of its own turns, its
 * final answer, turns and usage. A closed run's come from its result (the close event, one history read, no worker
 * involved); a running run's, a cancelled one's or one whose result left its messages out come through the `forkBase`,
 * `messages` and `state` queries.
 */
import type { WorkflowExecutionDescription, WorkflowHandle } from '@temporalio/client';
import { lastAssistant, messageText, type Message, type Usage } from '../../common/messages.js';
import { closedRunResult } from '../../node-common/run-result.js';
import type { AgentRunResult } from '../../common/run.js';
import { forkBaseQuery, stateQuery } from '../../workflows/definitions.js';
import { readTranscript } from '../read-transcript.js';

/** A run as a replay reads it. */
export interface RecordedRun {
  workflowId: string;
  /** The Keel status (`completed`, `stopped`, `failed`, …). */
  status: string;
  /** The run's own messages: its transcript after the messages it was started with. */
  messages: Message[];
  finalText: string;
  turns: number;
  usage: Usage;
  /** A closed run's typed output (docs/runs.md#typed-results), when it has one: what the json-schema grader reads. */
  output?: unknown;
}

/** The run `handle` names (its chain's latest run). */
export async function readRecordedRun(handle: WorkflowHandle): Promise<RecordedRun> {
  return (await closedRecord(handle, await handle.describe())) ?? queriedRecord(handle);
}

/** A closed run as its result has it (`d`: its description); undefined when it runs or its result lacks its messages. */
export async function closedRecord(
  handle: WorkflowHandle,
  d: WorkflowExecutionDescription,
): Promise<RecordedRun | undefined> {
  const closed = d.status.name === 'RUNNING' ? undefined : await closedRunResult(handle);
  if (!closed || closed.newMessagesOmitted) return undefined;
  return {
    workflowId: handle.workflowId,
    status: closed.status,
    messages: closed.newMessages,
    finalText: closed.finalText,
    turns: closed.turns,
    usage: closed.usage,
    ...(closed.output !== undefined ? { output: closed.output } : {}),
  };
}

/** A run as the `forkBase`, `messages` and `state` queries have it (a worker answers them). */
async function queriedRecord(handle: WorkflowHandle): Promise<RecordedRun> {
  const [base, state] = await Promise.all([handle.query(forkBaseQuery), handle.query(stateQuery)]);
  const transcript = await readTranscript(handle, base.messageCount);
  const messages = transcript.slice(base.given);
  const last = lastAssistant(messages);
  return {
    workflowId: handle.workflowId,
    status: state.status,
    messages,
    finalText: last ? messageText(last) : '', // as the workflow's result has it (workflows/agent/workflow.ts)
    turns: state.turns,
    usage: state.usage,
  };
}
