/**
 * The workflow's side of the stream relay (common/stream-relay.ts): hands durable events and model calls to the
 * worker's `keelStream` sink. A sink call is no command, so the history is the same with or without it; it is skipped
 * while history replays (what was relayed then was relayed by the run that made it).
 */
import { proxySinks, workflowInfo } from '@temporalio/workflow';
import type { LoggedEvent } from '../../common/events.js';
import type { Message } from '../../common/messages.js';
import type { RelayedClose, StreamRelaySinks } from '../../common/stream-relay.js';

const { keelStream } = proxySinks<StreamRelaySinks>();

const replaying = (): boolean => workflowInfo().unsafe.isReplaying;

/**
 * Relays `event`; a message event names its message's index in `transcript` as the `events` query does (found by
 * reference; a `message_start` comes before its message is appended: the next index).
 */
export function relayEvent(event: LoggedEvent, transcript: readonly Message[]): void {
  if (replaying()) return;
  if (event.type !== 'message_start' && event.type !== 'message_end') return keelStream.event(event);
  const at = transcript.lastIndexOf(event.message);
  keelStream.event({ ...event, messageIndex: at >= 0 ? at : transcript.length });
}

/** Relays that the model call of transcript index `messageIndex` is scheduled after durable event `after`. */
export function relayModelCall(messageIndex: number, after: number): void {
  if (!replaying()) keelStream.call({ messageIndex, after });
}

/** Relays that the run's execution ends as `ended`, after durable event `lastSeq` (its last). */
export function relayClose(ended: RelayedClose['ended'], lastSeq: number): void {
  if (!replaying()) keelStream.close({ ended, lastSeq });
}
