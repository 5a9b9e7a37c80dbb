/**
 * Follows a run live: reads its event stream (`AgentRunHandle.stream()`, client/run-stream.ts: the durable events, the
 * model's deltas as they arrive, tool progress; docs/architecture.md#live-output) and polls the `state` query (queues,
 * approvals, a session waiting), and feeds a {@link RunRenderer}. Ends when the workflow closes, or (optionally) when a
 * session is waiting for input. Keeps following through a Temporal outage (client/reconnect.ts).
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { LoggedEvent } from '../../common/events.js';
import type { AgentRunState } from '../../common/run.js';
import { StreamOffset } from '../../common/stream.js';
import { stateQuery } from '../../workflows/definitions.js';
import { streamRun } from '../../client/run-stream.js';
import { withDeadline } from '../outcome.js';
import { throughOutage } from '../../client/reconnect.js';
import type { RunRenderer } from '../render.js';

export interface FollowOptions {
  /** Start after this event sequence number (0: from the beginning). */
  after?: number;
  /** Stop when the session is waiting for input after an agent run ended (`keel run --mode session`). */
  stopWhenWaiting?: boolean;
  /** How often the `state` query is asked (queues, approvals), in ms (default 200). */
  pollMs?: number;
  /** Called for every event (e.g. `--json` prints them). */
  onEvent?: (e: LoggedEvent) => void;
  /** Stops following when aborted (Ctrl-C). */
  signal?: AbortSignal;
}

export interface FollowEnd {
  /** The workflow closed (else: a waiting session, or aborted). */
  closed: boolean;
  lastSeq: number;
  state?: AgentRunState;
}

/** Temporal rejects queries until the first workflow task ran, and while no worker polls: both are transient here. */
async function query<T>(handle: WorkflowHandle, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await withDeadline(handle, 5000, fn);
  } catch {
    return undefined;
  }
}

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

export async function followRun(handle: WorkflowHandle, r: RunRenderer, opts: FollowOptions = {}): Promise<FollowEnd> {
  let seq = opts.after ?? 0;
  const pollMs = opts.pollMs ?? 200;
  let state: AgentRunState | undefined;
  let agentEnded = false;
  let saidWaiting = false;
  // ends the stream and the state polls: the caller's signal, a session found waiting, or the run closed
  const stop = new AbortController();
  const onAbort = () => stop.abort();
  if (opts.signal?.aborted) stop.abort();
  opts.signal?.addEventListener('abort', onAbort, { once: true });

  const watchState = (async () => {
    while (!stop.signal.aborted) {
      state = (await query(handle, () => handle.query(stateQuery))) ?? state;
      if (stop.signal.aborted) return;
      if (state) r.queue(state.queued);
      if (state?.pendingApprovals) r.approvals(handle.workflowId, state.pendingApprovals);
      if (opts.stopWhenWaiting && agentEnded && state?.status === 'waiting') return stop.abort();
      if (agentEnded && !saidWaiting && (state?.status === 'waiting' || state?.status === 'failed')) {
        saidWaiting = true; // a session between agent runs (one whose last run failed still takes messages)
        r.waiting();
      }
      if (!agentEnded) saidWaiting = false;
      await pause(pollMs, stop.signal);
    }
  })();

  let closed = false;
  try {
    const stream = streamRun(handle, {
      from: StreamOffset.durable(seq).value,
      signal: stop.signal,
      describe: (fn) => throughOutage(fn, { signal: stop.signal }),
      closedReadTimeoutMs: 5000, // the outcome comes from history; the last events need a worker
    });
    for await (const e of stream) {
      if (e.type === 'message_update' || e.type === 'attempt_reset') r.delta(e);
      else if (e.type === 'tool_execution_update') r.tool({ kind: 'tool', ...e });
      else {
        const { offset: _offset, ...event } = e;
        if (event.seq > seq + 1 && seq > 0) r.skipped(event.seq - seq - 1);
        seq = event.seq;
        r.event(event);
        opts.onEvent?.(event);
        agentEnded = event.type === 'agent_end';
        if (event.type === 'agent_start') agentEnded = false;
      }
    }
    closed = !stop.signal.aborted; // the stream ends by itself only when the run has closed
  } finally {
    stop.abort();
    opts.signal?.removeEventListener('abort', onAbort);
    await watchState;
  }
  return { closed, lastSeq: seq, state };
}
