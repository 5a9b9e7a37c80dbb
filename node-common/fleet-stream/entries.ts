/**
 * The entries of a run's Redis stream (the fleet transport, docs/live-output.md#fleet-transport): one Redis stream per
 * workflow id (so a continue-as-new chain shares it), each entry a batch of one model call's delta items numbered as
 * in the heartbeat (common/stream.ts `DeltaRecorder`), so a reader computes the same offsets on either transport.
 */
import type { DeltaItem } from '../../common/stream.js';

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

/** The Redis key of workflow `workflowId`'s stream. */
export function streamKey(workflowId: string): string {
  return `keel:stream:${workflowId}`;
}

/** A batch as the flat field list of `XADD`. */
export function batchFields(b: DeltaBatch): string[] {
  const fields = ['r', b.runId, 'm', String(b.messageIndex), 'a', String(b.attempt), 'f', String(b.first)];
  fields.push('i', JSON.stringify(b.items));
  if (b.end) fields.push('e', '1');
  return fields;
}

/** The batch of an entry's flat field list (undefined: not one of ours). */
export function parseBatch(fields: string[]): DeltaBatch | undefined {
  const f = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) f.set(fields[i], fields[i + 1]);
  const runId = f.get('r');
  const messageIndex = Number(f.get('m'));
  const first = Number(f.get('f'));
  if (!runId || !Number.isInteger(messageIndex) || !Number.isInteger(first)) return undefined;
  let items: unknown;
  try {
    items = JSON.parse(f.get('i') ?? '[]');
  } catch {
    return undefined;
  }
  if (!Array.isArray(items)) return undefined;
  const batch: DeltaBatch = { runId, messageIndex, attempt: Number(f.get('a') ?? 1), first, items };
  if (f.get('e') === '1') batch.end = true;
  return batch;
}

/** The number after the last item of `b`. */
export const batchEnd = (b: DeltaBatch): number => b.first + b.items.length - 1;
