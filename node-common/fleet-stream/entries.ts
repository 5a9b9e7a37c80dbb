/**
 * The entries of a run's Redis stream (the fleet transport, docs/live-output.md#fleet-transport): one Redis stream per
 * workflow id (so a continue-as-new chain shares it), each entry a batch of one model call's delta items numbered as
 * in the heartbeat (common/stream.ts `DeltaRecorder`), so a reader computes the same offsets on either transport.
 * On an encrypting worker the items are sealed through its payload codecs (the same key ring as history), so the
 * store never holds a run's text in clear; a reader opens them with its own codecs.
 */
import { defaultPayloadConverter, type Payload, type PayloadCodec } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { DeltaItem } from '../../common/stream.js';
import type { ToolHeartbeat } from '../../common/events.js';
import type { RelayedClose } from '../../common/stream-relay.js';

// a CommonJS module: named imports fail under plain Node ESM (the CLI)
const { Payload: PayloadProto } = proto.temporal.api.common.v1;

/** One batch of delta items of a model call (run `runId`, transcript index `messageIndex`). */
export interface DeltaBatch {
  runId: string;
  messageIndex: number;
  attempt: number;
  /** The number of `items[0]` (from 1, as `StreamOffset.delta` counts). */
  first: number;
  items: DeltaItem[];
  /** The last batch of an attempt that completed: the call's final message is on its way to the workflow. */
  end?: true;
}

/** A batch as stored, its items not opened yet. */
export interface StoredBatch extends Omit<DeltaBatch, 'items'> {
  count: number;
  fields: Map<string, string>;
}

/** The Redis key of workflow `workflowId`'s stream. */
export function streamKey(workflowId: string): string {
  return `keel:stream:${workflowId}`;
}

/** A batch as the flat field list of `XADD`, its items sealed through `codecs` when there are any. */
export async function batchFields(b: DeltaBatch, codecs: readonly PayloadCodec[]): Promise<string[]> {
  const fields = ['r', b.runId, 'm', String(b.messageIndex), 'a', String(b.attempt), 'f', String(b.first)];
  fields.push('n', String(b.items.length), ...(await valueFields(b.items, codecs)));
  if (b.end) fields.push('e', '1');
  return fields;
}

/** `value` as an entry's fields: `i` its JSON, or `p` its payload sealed through `codecs` when there are any. */
export async function valueFields(value: unknown, codecs: readonly PayloadCodec[]): Promise<string[]> {
  if (codecs.length === 0) return ['i', JSON.stringify(value)];
  let payloads = [defaultPayloadConverter.toPayload(value)];
  for (const c of codecs) payloads = await c.encode(payloads);
  return ['p', Buffer.from(PayloadProto.encode(payloads[0]).finish()).toString('base64')];
}

/** The value of an entry's fields (see {@link valueFields}), opened through `codecs`; throws when it cannot be. */
export async function openValue(fields: Map<string, string>, codecs: readonly PayloadCodec[]): Promise<unknown> {
  const sealed = fields.get('p');
  if (sealed === undefined) return JSON.parse(fields.get('i') ?? 'null');
  let payloads: Payload[] = [PayloadProto.decode(Buffer.from(sealed, 'base64'))];
  for (const c of [...codecs].reverse()) payloads = await c.decode(payloads);
  return defaultPayloadConverter.fromPayload(payloads[0]);
}

/** An entry's flat field list as a map. */
export function fieldMap(flat: string[]): Map<string, string> {
  const fields = new Map<string, string>();
  for (let i = 0; i + 1 < flat.length; i += 2) fields.set(flat[i], flat[i + 1]);
  return fields;
}

/** An entry's batch header (undefined: not one of ours). */
export function parseStored(flat: string[]): StoredBatch | undefined {
  const fields = fieldMap(flat);
  const runId = fields.get('r');
  const [messageIndex, first, count] = ['m', 'f', 'n'].map((k) => Number(fields.get(k)));
  if (!runId || ![messageIndex, first, count].every(Number.isInteger)) return undefined;
  const stored: StoredBatch = { runId, messageIndex, attempt: Number(fields.get('a') ?? 1), first, count, fields };
  if (fields.get('e') === '1') stored.end = true;
  return stored;
}

/** The batch with its items, opened through `codecs` when sealed (undefined: they cannot be read here). */
export async function openBatch(s: StoredBatch, codecs: readonly PayloadCodec[]): Promise<DeltaBatch | undefined> {
  const { fields, count: _count, ...batch } = s;
  let items: unknown;
  try {
    items = await openValue(fields, codecs);
  } catch {
    return undefined; // sealed under a key this client does not have, or not ours
  }
  return Array.isArray(items) ? { ...batch, items: items as DeltaItem[] } : undefined;
}

/** The number of the last item of `b`. */
export const batchEnd = (b: { first: number; count: number }): number => b.first + b.count - 1;

/**
 * The run's other entries beside its delta batches: a running tool's latest update (as its heartbeat carries it), and
 * the close of a run's execution, appended after its last durable event was relayed (relay-entries.ts).
 */
export type SideEntry =
  { kind: 'tool'; runId: string; fields: Map<string, string> } | ({ kind: 'close'; runId: string } & RelayedClose);

/** A tool update's `XADD` fields, its heartbeat sealed through `codecs` when there are any. */
export async function toolFields(runId: string, t: ToolHeartbeat, codecs: readonly PayloadCodec[]): Promise<string[]> {
  return ['r', runId, 'k', 'tool', ...(await valueFields(t, codecs))];
}

/** A close's `XADD` fields. */
export function closeFields(runId: string, c: RelayedClose): string[] {
  return ['r', runId, 'k', 'close', 'x', c.ended, 's', String(c.lastSeq)];
}

/** An entry that is not a batch: a tool update or a close (undefined: neither). */
export function parseSide(flat: string[]): SideEntry | undefined {
  const fields = fieldMap(flat);
  const runId = fields.get('r');
  const kind = fields.get('k');
  if (!runId || kind === undefined) return undefined;
  if (kind === 'tool') return { kind, runId, fields };
  const lastSeq = Number(fields.get('s'));
  const ended = fields.get('x') as RelayedClose['ended'];
  return kind === 'close' && Number.isInteger(lastSeq) ? { kind, runId, ended, lastSeq } : undefined;
}

/** A tool update's heartbeat, opened through `codecs` (undefined: it cannot be read here). */
export async function openTool(
  fields: Map<string, string>,
  codecs: readonly PayloadCodec[],
): Promise<ToolHeartbeat | undefined> {
  try {
    const t = (await openValue(fields, codecs)) as ToolHeartbeat | undefined;
    return t?.kind === 'tool' ? t : undefined;
  } catch {
    return undefined;
  }
}
