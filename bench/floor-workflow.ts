/**
 * The engine floor: the same number of activity round trips as a Keel turn (one "model" activity, then one "tool"
 * activity), with no loop logic, no queries, no heartbeats, no search attributes. What Temporal itself costs per turn.
 * Bundled separately from Keel's workflows (bench/workflows.ts), on its own task queue.
 *
 * `FloorOptions` add Keel's per-turn extras one at a time, to attribute Keel's overhead above the floor:
 * `heartbeat` (each activity heartbeats once at start, as Keel's `startHeartbeat` does), `query` (each activity reads
 * from its workflow with one query, as Keel's transcript cache does for each new message it has not seen),
 * `upsert` (the four Keel search attributes upserted and the current details set at every turn end, as `publish`),
 * `toolQueue` (the tool activity on `<taskQueue>-tools`, polled by a second worker of the same process, as Keel's tool
 * activities go to the run's tool queue since 0.4.2: an activity on another task queue than its workflow's is never
 * dispatched eagerly, it goes through the server's matching).
 */
import {
  condition,
  defineQuery,
  defineSignal,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { KEEL_COST_USD, KEEL_MODEL, KEEL_STATUS, KEEL_TURNS } from '../common/search-attributes.js';
import type { BenchActivities } from './bench-activities.js';

const plain = proxyActivities<BenchActivities>({ startToCloseTimeout: '1m' });
/** With heartbeats, the activity options Keel gives its model and tool activities. */
const heartbeating = proxyActivities<BenchActivities>({ startToCloseTimeout: '10m', heartbeatTimeout: '30s' });

export interface FloorOptions {
  heartbeat?: boolean;
  query?: boolean;
  upsert?: boolean;
  toolQueue?: boolean;
}

export const floorMessagesQuery = defineQuery<
  { messages: unknown[]; from: number; total: number },
  [{ from?: number; limit?: number }?]
>('messages');

export async function floorWorkflow(turns: number, opts: FloorOptions = {}): Promise<number> {
  let messages = 1;
  setHandler(floorMessagesQuery, (q) => ({
    messages: [{ role: 'user', content: 'go', timestamp: 0 }],
    from: q?.from ?? 0,
    total: messages,
  }));
  const act = { heartbeat: opts.heartbeat === true, query: opts.query === true };
  const { floorModel, floorTool: sameQueueTool } = opts.heartbeat ? heartbeating : plain;
  const floorTool = opts.toolQueue
    ? proxyActivities<BenchActivities>({
        startToCloseTimeout: opts.heartbeat ? '10m' : '1m',
        ...(opts.heartbeat ? { heartbeatTimeout: '30s' } : {}),
        taskQueue: `${workflowInfo().taskQueue}-tools`,
      }).floorTool
    : sameQueueTool;
  for (let turn = 1; turn <= turns; turn++) {
    const reply = await floorModel(turn, act);
    messages += 1;
    await floorTool(reply.toolCallId, act);
    messages += 1;
    if (opts.upsert) {
      setCurrentDetails(`**running** · turn ${turn} · ${messages} messages`);
      upsertSearchAttributes([
        { key: KEEL_STATUS, value: 'running' },
        { key: KEEL_MODEL, value: 'scripted/bench-noop' },
        { key: KEEL_TURNS, value: turn },
        { key: KEEL_COST_USD, value: 0 },
      ]);
    }
  }
  return turns;
}

export const parkedWakeSignal = defineSignal('wake');

/**
 * The engine floor of a parked session: one model + one tool round trip, then wait for a signal (or an hour), as a
 * Keel session waits for a follow-up. Measures what a cached workflow costs a worker before any Keel state.
 */
export async function parkedWorkflow(): Promise<void> {
  const reply = await plain.floorModel(1, {});
  await plain.floorTool(reply.toolCallId, {});
  let woken = false;
  setHandler(parkedWakeSignal, () => {
    woken = true;
  });
  await condition(() => woken, '1h');
}
