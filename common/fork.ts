/**
 * What forks share between the workflow, the client and the workers (issue 37 item 2; docs/runs.md#fork-and-rewind):
 * the `forkBase` query's answer and the memo a fork is started with.
 */
import type { AgentRunInput } from './run.js';

/** The `forkBase` query's answer: one consistent snapshot of what a fork of the run needs besides the transcript. */
export interface ForkBase {
  /** The run's input without `prompt` and `messages` (its configuration). */
  config: Omit<AgentRunInput, 'prompt' | 'messages'>;
  /** transcript[0, given) was given in the run's input (`messages`); its assistant messages are not turns of the run. */
  given: number;
  /** Completed turns. */
  turns: number;
  /** Transcript length at the same moment. */
  messageCount: number;
}

/** The memo key a fork (or a rewound session) is started with. */
export const FORK_MEMO_KEY = 'keelForkedFrom';

/** The memo `keelForkedFrom` of a fork: the run it was forked from and where. */
export interface ForkMemo {
  workflowId: string;
  runId: string;
  atTurn: number;
  /** Set by `rewind`: the run replaced the session `workflowId` (same id) instead of starting beside it. */
  rewound?: true;
}

/** `forked from <id> at turn N` (`rewound to turn N of run <runId>` for a rewind): the fork's summary and its `keel list` note. */
export function forkLine(m: ForkMemo): string {
  return m.rewound
    ? `rewound to turn ${m.atTurn} of run ${m.runId}`
    : `forked from ${m.workflowId} at turn ${m.atTurn}`;
}

/** The fork memo of a listed or described run (its decoded memo), or undefined: not a fork. */
export function forkMemoOf(memo: Record<string, unknown> | undefined): ForkMemo | undefined {
  const m = memo?.[FORK_MEMO_KEY] as Partial<ForkMemo> | undefined;
  return m && typeof m.workflowId === 'string' && typeof m.atTurn === 'number' ? (m as ForkMemo) : undefined;
}
