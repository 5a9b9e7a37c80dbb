/**
 * `AgentRunHandle.stream()`: the run's live event stream (common/stream.ts) read through the Temporal client alone —
 * the durable events from the `events` query, the model's deltas from the pending `callModel` activity's heartbeat
 * (`describe`), tool progress from the tool activities' heartbeats. Nothing here writes to the run or its history.
 *
 * The `events` query costs the worker a workflow task, so it is asked only when the run's history grew since the last
 * read (durable events are only emitted by workflow tasks, which add history events; heartbeats add none). A read runs
 * beside the `describe` polls, not instead of them: one that is slow (a run that continued as new is queried by
 * replaying it on a worker, seen to take 1–2 s) would otherwise let whole model calls start and finish unseen. Their
 * heartbeats are kept meanwhile and sent once the durable events before them are.
 */
import type { WorkflowHandle } from '@temporalio/client';
import type { StreamEvent } from '../common/stream.js';
import { RunStreamReader } from './run-stream/reader.js';
import { fleetStreamOf } from './fleet-stream/registry.js';
import { fleetStream } from './fleet-stream/transport.js';

export interface StreamOptions {
  /** Deliver the events after this offset (the `offset` of the last event you applied); default 0: all still held. */
  from?: number;
  /** Ends the iteration (without an error) when aborted. */
  signal?: AbortSignal;
  /**
   * The pause between two looks at the run (`describe`), in ms, when nothing better is known (default 25), and the
   * shortest one when given. While a model call streams, the reader looks in step with its heartbeats (one `describe`
   * a few ms after each is due); while only tools run it backs off to 250 ms, while the run waits (nothing pending) to
   * 1 s (client/run-stream/cadence.ts).
   */
  pollMs?: number;
  /**
   * Runs each `describe` of the run. Default: an unreachable Temporal is retried after a pause, silently and without
   * end; the CLI passes its `throughOutage`, which says "reconnecting…" and gives up after `$KEEL_RECONNECT_TIMEOUT`.
   */
  describe?: <T>(describe: () => Promise<T>) => Promise<T>;
  /**
   * When the run has closed and no worker answers the `events` query for this long (ms), end without its last events
   * (default: wait for a worker; the CLI, which prints the outcome from history anyway, gives it 5 s).
   */
  closedReadTimeoutMs?: number;
  /**
   * On the fleet transport (docs/live-output.md#fleet-transport): called with the path the reader takes each time it
   * takes one — `'store'` (blocking on the stream store) at first and when the store answers again, `'heartbeat'`
   * (polling Temporal) while the store is down. Never called on the default transport.
   */
  onTransport?: (transport: 'store' | 'heartbeat') => void;
}

/**
 * The stream of `handle`'s run from `opts.from`: each event once, in order, with increasing offsets (tool updates
 * aside, which carry none). Reconnects by itself: a Temporal outage or a moment without a worker to answer the query
 * only delays events. Ends when the run (the last of its continue-as-new chain) has closed and its last events were
 * read, or when `signal` aborts.
 * (The reader: client/run-stream/reader.ts, which says how it places a model call's deltas; on the fleet transport,
 * when the client was connected with `stream: { redis }` or `$KEEL_STREAM_REDIS_URL` is set:
 * client/fleet-stream/transport.ts.)
 */
export async function* streamRun(handle: WorkflowHandle, opts: StreamOptions = {}): AsyncGenerator<StreamEvent> {
  const fleet = fleetStreamOf(handle.client);
  if (fleet) yield* fleetStream(handle, fleet, opts);
  else yield* new RunStreamReader(handle, opts).events();
}
