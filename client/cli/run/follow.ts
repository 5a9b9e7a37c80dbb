/**
 * Follows a run live: polls the `events` query (deterministic events), `describe` (heartbeat details of the pending
 * `callModel` / tool activities: streamed text and tool progress, docs/architecture.md#heartbeats) and the `state` query (queues), and
 * feeds a {@link RunRenderer}. Ends when the workflow closes, or (optionally) when a session is waiting for input.
 * Keeps following through a Temporal outage (reconnect.ts).
 */
import { defaultPayloadConverter } from '@temporalio/common';
import type { WorkflowHandle } from '@temporalio/client';
import type { LoggedEvent, ModelHeartbeat, ToolHeartbeat } from '../../../common/events.js';
import type { AgentRunState } from '../../../common/run.js';
import type { EventsPage } from '../../../common/events.js';
import { eventsQuery, stateQuery } from '../../../workflows/definitions.js';
import { sleep } from '../context.js';
import { withDeadline } from '../outcome.js';
import { throughOutage } from '../reconnect.js';
import type { RunRenderer } from '../render.js';

export interface FollowOptions {
  /** Start after this event sequence number (0: from the beginning). */
  after?: number;
  /** Stop when the session is waiting for input after an agent run ended (`keel run --mode session`). */
  stopWhenWaiting?: boolean;
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

/** Decoded heartbeat details of the run's pending activities. */
export function heartbeatsOf(raw: {
  pendingActivities?:
    | { activityType?: { name?: string | null } | null; heartbeatDetails?: { payloads?: unknown[] | null } | null }[]
    | null;
}): (ModelHeartbeat | ToolHeartbeat)[] {
  const out: (ModelHeartbeat | ToolHeartbeat)[] = [];
  for (const a of raw.pendingActivities ?? []) {
    const payload = a.heartbeatDetails?.payloads?.[0];
    if (!payload) continue;
    try {
      const d = defaultPayloadConverter.fromPayload(payload as never) as ModelHeartbeat | ToolHeartbeat | undefined;
      if (d && (d.kind === 'model' || d.kind === 'tool')) out.push(d);
    } catch {
      // not ours, or not JSON: ignore
    }
  }
  return out;
}

/** Temporal rejects queries until the first workflow task ran, and while no worker polls: both are transient here. */
async function query<T>(handle: WorkflowHandle, fn: () => Promise<T>): Promise<T | undefined> {
  try {
    return await withDeadline(handle, 5000, fn);
  } catch {
    return undefined;
  }
}

export async function followRun(handle: WorkflowHandle, r: RunRenderer, opts: FollowOptions = {}): Promise<FollowEnd> {
  let seq = opts.after ?? 0;
  const pollMs = opts.pollMs ?? 200;
  let state: AgentRunState | undefined;
  let agentEnded = false;
  let saidWaiting = false;

  const readEvents = async (): Promise<boolean> => {
    let any = false;
    for (;;) {
      const page: EventsPage | undefined = await query(handle, () =>
        handle.query(eventsQuery, { after: seq, limit: 500 }),
      );
      if (!page || page.events.length === 0) return any;
      if (page.firstSeq > seq + 1 && seq > 0) r.skipped(page.firstSeq - seq - 1);
      for (const e of page.events) {
        if (e.seq <= seq) continue;
        seq = e.seq;
        any = true;
        r.event(e);
        opts.onEvent?.(e);
        agentEnded = e.type === 'agent_end';
        if (e.type === 'agent_start') agentEnded = false;
      }
      if (page.events.length < 500) return any;
    }
  };

  for (;;) {
    if (opts.signal?.aborted) return { closed: false, lastSeq: seq, state };
    await readEvents();
    const desc = await throughOutage(() => handle.describe(), { signal: opts.signal });
    if (desc.status.name !== 'RUNNING') {
      await readEvents(); // the last events (needs a worker to answer; skipped if none)
      return { closed: true, lastSeq: seq, state };
    }
    for (const h of heartbeatsOf(desc.raw)) {
      if (h.kind === 'model') r.partial(h);
      else r.tool(h);
    }
    state = (await query(handle, () => handle.query(stateQuery))) ?? state;
    if (state) r.queue(state.queued);
    if (state?.pendingApprovals) r.approvals(handle.workflowId, state.pendingApprovals);
    if (opts.stopWhenWaiting && agentEnded && state?.status === 'waiting')
      return { closed: false, lastSeq: seq, state };
    if (agentEnded && !saidWaiting && (state?.status === 'waiting' || state?.status === 'failed')) {
      saidWaiting = true; // a session between agent runs (one whose last run failed still takes messages)
      r.waiting();
    }
    if (!agentEnded) saidWaiting = false;
    await sleep(pollMs);
  }
}
