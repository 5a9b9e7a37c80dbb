/**
 * The input of a fork (issue 37 item 2; docs/runs.md#fork-and-rewind), read from the original run: its configuration
 * and turn count (the `forkBase` query, one snapshot) and its transcript (the `messages` query, paged; a page the
 * workers offloaded comes from the payload store). Nothing is written to the original.
 */
import { QueryNotRegisteredError, type WorkflowHandle } from '@temporalio/client';
import type { ForkBase, ForkMemo } from '../../common/fork.js';
import type { Message } from '../../common/messages.js';
import type { AgentRunInput } from '../../common/run.js';
import { forkBaseQuery } from '../../workflows/definitions.js';
import { readTranscript } from '../read-transcript.js';
import { assistantCount, badTurn, forkPoint } from './fork-point.js';

/** What `AgentRunHandle.fork` takes. */
export interface ForkOptions {
  /**
   * The fork's transcript is the original's first `atTurn` turns (0 to its completed turns; a turn is one model call,
   * numbered as `keel watch` numbers them). Without `prompt` the user messages that opened turn `atTurn + 1` come too,
   * so the fork's first model request is the original's at turn `atTurn + 1`.
   */
  atTurn: number;
  /** A new user message after turn `atTurn`, instead of the ones that opened turn `atTurn + 1` in the original. */
  prompt?: AgentRunInput['prompt'];
  /** Another model (default the original's). */
  model?: string;
  /** Another system prompt (default the original's). */
  system?: string;
  /** The fork's workflow id (default `<original id>-fork-<8 hex>`). */
  workflowId?: string;
}

/** A fork refused before anything was started: `errors` says why, one line each. */
export class InvalidForkError extends Error {
  constructor(
    readonly errors: string[],
    verb: 'fork' | 'rewind' = 'fork',
  ) {
    super(`Cannot ${verb}: ${errors.join('; ')}`);
    this.name = 'InvalidForkError';
  }
}

/** The fork's input and memo. */
export interface ForkPlan {
  input: AgentRunInput;
  memo: ForkMemo;
  /** The original's task queue: the fork runs where it ran. */
  taskQueue: string;
  /** The original's status (Temporal's, e.g. `RUNNING`) and, for a session, its Keel status. */
  status: string;
}

/**
 * Reads the original (`handle`, its latest run) and plans the fork. Throws `InvalidForkError` for a bad turn.
 * `exact`: the transcript is the first `atTurn` turns alone, also without a prompt (a rewind: the session then waits).
 */
export async function planFork(handle: WorkflowHandle, opts: ForkOptions, exact = false): Promise<ForkPlan> {
  const d = await handle.describe();
  const base = await handle.query(forkBaseQuery).catch((err: unknown) => {
    if (!(err instanceof QueryNotRegisteredError)) throw err;
    // a run pinned to a build of Keel before 0.9.0: its workers do not answer forkBase
    throw new InvalidForkError(
      [
        `run ${handle.workflowId} runs on a worker build without forks (Keel before 0.9.0); fork it once a 0.9.0 worker serves it`,
      ],
      exact ? 'rewind' : 'fork',
    );
  });
  const bad = badTurn(handle.workflowId, opts.atTurn, base.turns);
  if (bad) throw new InvalidForkError([bad], exact ? 'rewind' : 'fork');
  const transcript = await readTranscript(handle, base.messageCount);
  return {
    input: forkInput(handle.workflowId, { ...base, transcript }, opts, exact),
    memo: { workflowId: handle.workflowId, runId: d.runId, atTurn: opts.atTurn },
    taskQueue: d.taskQueue,
    status: d.status.name,
  };
}

/**
 * The input of a run started from the first `opts.atTurn` turns of a recorded run (`recorded`: its `forkBase` and its
 * transcript; a turn it has completed, see {@link badTurn}). No I/O: a fork reads the record through queries, a
 * counterfactual replay may take it from anywhere. Throws `InvalidForkError` when a task would have nothing to do.
 */
export function forkInput(
  workflowId: string,
  recorded: Pick<ForkBase, 'config' | 'given'> & { transcript: readonly Message[] },
  opts: Omit<ForkOptions, 'workflowId'>,
  exact = false,
): AgentRunInput {
  const { config, given, transcript } = recorded;
  const cut = forkPoint(transcript, assistantCount(transcript.slice(0, given)), opts.atTurn);
  const messages = transcript.slice(0, opts.prompt === undefined && !exact ? cut.next : cut.end);
  // a session waits for its next message there (workflows/agent/fork-start.ts); a task would have nothing to do
  const answered = messages[messages.length - 1]?.role === 'assistant';
  if (opts.prompt === undefined && answered && config.mode !== 'session')
    throw new InvalidForkError([
      `turn ${opts.atTurn} of run ${workflowId} ends with the model's answer and no turn follows it: give a prompt to go on from there`,
    ]);
  return {
    ...config,
    ...(opts.model !== undefined ? { model: opts.model } : {}),
    ...(opts.system !== undefined ? { systemPrompt: opts.system } : {}),
    ...(messages.length > 0 ? { messages } : {}),
    ...(opts.prompt !== undefined ? { prompt: opts.prompt } : {}),
    // a fork keeps its original's prompt-cache key: its first requests share the original's prefix
    ...(exact
      ? {}
      : { modelOptions: { ...config.modelOptions, sessionId: config.modelOptions?.sessionId ?? workflowId } }),
  };
}
