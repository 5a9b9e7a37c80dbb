/**
 * The stream relay (docs/live-output.md#fleet-transport): the workflow hands each durable event, and where each model
 * call goes among them, to its worker through a workflow sink — no command, not called while history replays — and a
 * worker with a fleet stream store appends them to the run's stream (node-common/fleet-stream/relay.ts), so a reader
 * blocks on the store for them instead of asking the workflow.
 */
import type { Sinks } from '@temporalio/workflow';
import type { LoggedEvent } from './events.js';

/** A model call of transcript index `messageIndex`, scheduled after durable event `after`. */
export interface RelayedCall {
  messageIndex: number;
  after: number;
}

/**
 * How a run's execution ended, relayed after its last durable event (`lastSeq`): a reader that holds every event up to
 * it ends there without asking Temporal whether the run closed. `continuedAsNew`: the next run of the chain goes on.
 */
export interface RelayedClose {
  ended: 'completed' | 'failed' | 'cancelled' | 'continuedAsNew';
  lastSeq: number;
}

/** The sink every Keel worker registers (a no-op without a fleet stream store). */
export interface StreamRelaySinks extends Sinks {
  keelStream: {
    /** A durable event, as the `events` query gives it (with `messageIndex` on message events). */
    event(event: LoggedEvent): void;
    /** A model call about to be scheduled. */
    call(call: RelayedCall): void;
    /** The run's execution ends (its last workflow task returns, throws, or continues as new). */
    close(close: RelayedClose): void;
  };
}
