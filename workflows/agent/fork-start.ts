/**
 * How a fork or a rewound session starts (issue 37 item 2; docs/runs.md#fork-and-rewind). A session started from a
 * transcript that ends with the model's answer and no prompt — a session forked or rewound to a turn, no new message
 * given — waits for its next message instead of failing with "give a prompt". Only a run whose memo names the run it
 * was forked from (`keelForkedFrom`, set at start) asks; behind `since(PATCH.forkWaits)`.
 */
import { workflowInfo } from '@temporalio/workflow';
import { FORK_MEMO_KEY } from '../../common/fork.js';
import type { Message } from '../../common/messages.js';
import type { AgentRunInput } from '../../common/run.js';
import { PATCH } from '../patches.js';
import { since } from '../since.js';

/** A forked session without a prompt whose transcript ends with an answer: it waits for input. */
export function forkedSessionWaits(transcript: readonly Message[], input: AgentRunInput): boolean {
  const answered = transcript[transcript.length - 1]?.role === 'assistant';
  const session = input.prompt === undefined && (input.mode ?? 'task') === 'session';
  return answered && session && workflowInfo().memo?.[FORK_MEMO_KEY] !== undefined && since(PATCH.forkWaits);
}
