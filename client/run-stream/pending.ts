/**
 * What one `describe` of a run shows the stream reader (client/run-stream/reader.ts): the pending `callModel` activity
 * with its delta window once it heartbeated, and the running tools' latest updates.
 */
import type { ModelHeartbeat, ToolHeartbeat } from '../../common/events.js';
import type { HeartbeatDeltas } from '../../common/stream.js';
import type { HeartbeatDetailsDecoder } from '../heartbeat-details.js';

/** What one `describe` shows: the pending `callModel` (run and activity id, its deltas once it heartbeated), tools. */
export interface Pending {
  model?: { key: string; deltas?: HeartbeatDeltas };
  tools: ToolHeartbeat[];
}

interface PendingActivity {
  activityId?: string | null;
  activityType?: { name?: string | null } | null;
  heartbeatDetails?: { payloads?: unknown[] | null } | null;
}

/** The pending activities of run `runId` as `describe` shows them (their details decoded through `details`). */
export async function pendingOf(runId: string, raw: unknown, details: HeartbeatDetailsDecoder): Promise<Pending> {
  const out: Pending = { tools: [] };
  details.poll();
  const acts = ((raw as { pendingActivities?: unknown[] | null }).pendingActivities ?? []) as PendingActivity[];
  for (const a of acts) {
    const isModel = a.activityType?.name === 'callModel';
    const key = `${runId}/${a.activityId ?? ''}`;
    if (isModel) out.model = { key };
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
