/**
 * What one `describe` of a run shows the stream reader (client/run-stream/reader.ts): the pending `callModel` activity
 * with its delta window once it heartbeated, and the running tools' latest updates.
 */
import type { ModelHeartbeat, ToolHeartbeat } from '../../common/events.js';
import type { HeartbeatDeltas } from '../../common/stream.js';
import type { HeartbeatDetailsDecoder } from '../heartbeat-details.js';

/**
 * What one `describe` shows: the pending `callModel` (run and activity id, its deltas and the server's stamp of its
 * last heartbeat, in ms, once it heartbeated), the tools' latest updates, and whether any other activity is pending.
 */
export interface Pending {
  model?: { key: string; deltas?: HeartbeatDeltas; heartbeatAt?: number };
  tools: ToolHeartbeat[];
  running?: boolean;
}

interface PendingActivity {
  activityId?: string | null;
  activityType?: { name?: string | null } | null;
  heartbeatDetails?: { payloads?: unknown[] | null } | null;
  lastHeartbeatTime?: { seconds?: number | { toNumber(): number } | null; nanos?: number | null } | null;
}

/** A protobuf timestamp in ms (undefined: none). */
function stampMs(t: PendingActivity['lastHeartbeatTime']): number | undefined {
  if (!t?.seconds) return undefined;
  const s = typeof t.seconds === 'number' ? t.seconds : t.seconds.toNumber();
  return s * 1000 + (t.nanos ?? 0) / 1e6;
}

/** The pending activities of run `runId` as `describe` shows them (their details decoded through `details`). */
export async function pendingOf(runId: string, raw: unknown, details: HeartbeatDetailsDecoder): Promise<Pending> {
  const out: Pending = { tools: [] };
  details.poll();
  const acts = ((raw as { pendingActivities?: unknown[] | null }).pendingActivities ?? []) as PendingActivity[];
  for (const a of acts) {
    const isModel = a.activityType?.name === 'callModel';
    const key = `${runId}/${a.activityId ?? ''}`;
    if (isModel) out.model = { key, heartbeatAt: stampMs(a.lastHeartbeatTime) };
    else out.running = true;
    const payload = a.heartbeatDetails?.payloads?.[0];
    if (!payload) continue;
    let d: ModelHeartbeat | ToolHeartbeat | undefined;
    try {
      d = (await details.decode(key, payload as never)) as ModelHeartbeat | ToolHeartbeat | undefined;
    } catch {
      continue; // not ours, not JSON, or sealed under a key this client does not have
    }
    if (d?.kind === 'tool') out.tools.push(d);
    else if (d?.kind === 'model' && d.deltas && isModel) out.model!.deltas = d.deltas;
  }
  return out;
}
