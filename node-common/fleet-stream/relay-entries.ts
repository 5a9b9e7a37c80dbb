/**
 * The entries of a run's relayed durable events (docs/live-output.md#fleet-transport): a second Redis stream per
 * workflow id, beside its delta batches (entries.ts), whose entry ids are the events' own sequence numbers — event
 * `seq` is entry `<seq>-0`, and the model call scheduled after it entry `<seq>-<messageIndex + 1>` — so the store
 * keeps them in the workflow's order and an append repeated (a workflow task run again) is refused as a duplicate.
 */
import type { PayloadCodec } from '@temporalio/common';
import type { LoggedEvent } from '../../common/events.js';
import type { RelayedCall } from '../../common/stream-relay.js';
import { fieldMap, openValue, valueFields } from './entries.js';

/** Events longer than this (JSON characters) are relayed without their body: a reader reads them from the workflow. */
export const RELAYED_EVENT_MAX_CHARS = 256 * 1024;

/** An entry of the events stream, opened. */
export type RelayEntry =
  | {
      kind: 'event';
      runId: string;
      seq: number;
      /** undefined: too long, or sealed under a key not held here */ event?: LoggedEvent;
    }
  | ({ kind: 'call'; runId: string } & RelayedCall);

/** The field a 0.11.0 worker's entries carry: it relays its runs' closes and tool updates too (entries.ts `SideEntry`). */
const CLOSES: [string, string] = ['v', '2'];

/** Whether an entry (as `XREAD` gives it) comes from a worker that relays its run's close and tool updates too. */
export function relaysCloses(flat: string[]): boolean {
  return fieldMap(flat).get(CLOSES[0]) === CLOSES[1];
}

/** The Redis key of workflow `workflowId`'s relayed events. */
export function eventsKey(workflowId: string): string {
  return `keel:events:${workflowId}`;
}

/** The entry id of event `seq` (the first id after every entry of the events before it). */
export const eventEntryId = (seq: number): string => `${seq}-0`;

/** An event's entry id and fields (sealed through `codecs` when there are any). */
export async function eventEntry(runId: string, e: LoggedEvent, codecs: readonly PayloadCodec[]): Promise<string[]> {
  const head = [eventEntryId(e.seq), 'r', runId, 's', String(e.seq), ...CLOSES];
  if (JSON.stringify(e).length > RELAYED_EVENT_MAX_CHARS) return [...head, 'big', '1'];
  return [...head, ...(await valueFields(e, codecs))];
}

/** A model call's entry id and fields. */
export function callEntry(runId: string, c: RelayedCall): string[] {
  return [`${c.after}-${c.messageIndex + 1}`, 'r', runId, 'c', String(c.messageIndex), 's', String(c.after), ...CLOSES];
}

/** An entry as `XREAD` gives it, opened through `codecs` (undefined: not one of ours). */
export async function openRelayEntry(flat: string[], codecs: readonly PayloadCodec[]): Promise<RelayEntry | undefined> {
  const fields = fieldMap(flat);
  const runId = fields.get('r');
  const seq = Number(fields.get('s'));
  if (!runId || !Number.isInteger(seq)) return undefined;
  const call = fields.get('c');
  if (call !== undefined) return { kind: 'call', runId, messageIndex: Number(call), after: seq };
  if (fields.get('big') === '1') return { kind: 'event', runId, seq };
  try {
    const event = (await openValue(fields, codecs)) as LoggedEvent;
    return { kind: 'event', runId, seq, ...(event?.seq === seq ? { event } : {}) };
  } catch {
    return { kind: 'event', runId, seq };
  }
}
