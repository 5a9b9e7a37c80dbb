/** Section 1 of the bench: per-turn overhead of Keel against the engine floor, its variants and Pi in process. */
import type { Client } from '@temporalio/client';
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { billableActions, steadyTurnActions } from './actions.js';
import { fetchChain, timeBreakdown } from './history.js';
import type { FloorOptions } from './floor-workflow.js';
import { loadPiAgentCore, PI_AGENT_CORE, PI_AGENT_CORE_VERSION, runPiLoop } from './pi-loop.js';
import { fmt, pairedRatio, summarize, type Summary } from './stats.js';
import { ROUNDS, type Bench } from './context.js';
import { keelInput, keelRun, floorRun } from './runs.js';
import { childPid, procCpuMs } from './proc.js';
import { localReadContenders, localReadResult } from './local-read.js';
import { replayCost, type ReplayCost } from './replay-cost.js';

const OVERHEAD_TURNS = 20;
/** Floor variants that add Keel's per-turn extras one at a time (bench/floor-workflow.ts). */
const FLOOR_VARIANTS: { name: string; opts: FloorOptions }[] = [
  { name: 'floor + heartbeat at activity start', opts: { heartbeat: true } },
  { name: 'floor + 1 query per activity', opts: { query: true } },
  { name: 'floor + search-attribute upsert per turn', opts: { upsert: true } },
  { name: 'floor + all three', opts: { heartbeat: true, query: true, upsert: true } },
  { name: 'floor + tool activity on another task queue', opts: { toolQueue: true } },
];
export const PI_INSTALL = `npm install --save-dev --save-exact ${PI_AGENT_CORE}@${PI_AGENT_CORE_VERSION}`;

export async function overheadSection(b: Bench) {
  const { log, server, client, keel1, main, keelBundlePath, benchBundlePath } = b;
  log(
    `overhead: ${OVERHEAD_TURNS}-turn runs, warm-up then ${ROUNDS} rounds of Keel, floor, ${FLOOR_VARIANTS.length} floor variants, Keel + read as activity / local activity, Pi`,
  );
  const pi = await loadPiAgentCore();
  if (!pi.core) log(`${PI_AGENT_CORE} not installed (${pi.error}); install with: ${PI_INSTALL}`);
  const input = keelInput('bench-noop', ['noop'], OVERHEAD_TURNS);
  const contenders: { name: string; run: () => Promise<{ ms: number; workflowId: string }> }[] = [
    {
      name: 'keel',
      run: async () => {
        const k = await keelRun(keel1, input);
        if (k.result.turns !== OVERHEAD_TURNS || k.result.status !== 'stopped')
          throw new Error(`Keel run: ${k.result.status}, ${k.result.turns} turns`);
        return k;
      },
    },
    { name: 'floor', run: () => floorRun(client, OVERHEAD_TURNS) },
    ...FLOOR_VARIANTS.map((v) => ({ name: v.name, run: () => floorRun(client, OVERHEAD_TURNS, v.opts) })),
    ...localReadContenders(keel1, OVERHEAD_TURNS),
  ];
  for (let i = 0; i < 1; i++) {
    for (const c of contenders) await c.run();
    if (pi.core) for (let j = 0; j < 5; j++) await runPiLoop(pi.core, OVERHEAD_TURNS);
  }
  const serverPid = childPid('temporal');
  const wall = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const workerCpu = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const serverCpu = new Map<string, number[]>(contenders.map((c) => [c.name, []]));
  const last = new Map<string, string>();
  const piMs: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    for (const c of contenders) {
      const w0 = await main.cpuMs();
      const s0 = procCpuMs(serverPid);
      const x = await c.run();
      workerCpu.get(c.name)!.push((await main.cpuMs()) - w0);
      serverCpu.get(c.name)!.push(procCpuMs(serverPid) - s0);
      wall.get(c.name)!.push(x.ms / OVERHEAD_TURNS);
      last.set(c.name, x.workflowId);
    }
    if (pi.core) {
      const p = await runPiLoop(pi.core, OVERHEAD_TURNS);
      if (p.turns !== OVERHEAD_TURNS) throw new Error(`Pi loop made ${p.turns} turns`);
      piMs.push(p.ms / OVERHEAD_TURNS);
    }
    log(
      `  round ${r + 1}: ${contenders.map((c) => `${c.name.replace('floor + ', '+').replace('keel + ', 'keel+')} ${fmt(wall.get(c.name)![r])}`).join(', ')}${pi.core ? `, Pi ${fmt(piMs[r], 3)}` : ''} ms/turn`,
    );
  }
  const keel = wall.get('keel')!;
  const floor = wall.get('floor')!;
  const cpuPerTurn = (name: string) => ({
    workerMs: summarize(workerCpu.get(name)!.map((x) => x / OVERHEAD_TURNS)),
    serverMs: serverPid ? summarize(serverCpu.get(name)!.map((x) => x / OVERHEAD_TURNS)) : null,
  });

  // Profile: what one Keel turn costs in round trips, queries and time, from history timestamps.
  await main.stats(true);
  const profiled = await keelRun(keel1, input);
  const queries = await main.stats(true);
  const perTurn = async (workflowId: string, modelActivity: string) => {
    const chain = await fetchChain(client, workflowId);
    const b = timeBreakdown(chain.events);
    const turns = OVERHEAD_TURNS;
    const actions = billableActions(chain.events, modelActivity);
    return {
      workflowId,
      /** Billable actions (bench/actions.ts): per run, per turn on average, one steady tool turn, by kind. */
      actions: {
        total: actions.total,
        perTurn: actions.total / turns,
        steadyTurn: steadyTurnActions(actions),
        byKind: actions.byKind,
      },
      wallMsPerTurn: b.wallMs / turns,
      eventsPerTurn: chain.events.length / turns,
      workflowTasksPerTurn: b.workflowTasks / turns,
      wftQueueMsPerTurn: b.wftQueueMs / turns,
      wftRunMsPerTurn: b.wftRunMs / turns,
      activities: Object.fromEntries(
        Object.entries(b.activities).map(([name, a]) => [
          name,
          {
            perTurn: a.count / turns,
            queueMsPerTurn: a.queueMs / turns,
            runMsPerTurn: a.runMs / turns,
            runMsEach: a.runMs / a.count,
          },
        ]),
      ),
      otherMsPerTurn: b.otherMs / turns,
      eventsByType: b.eventsByType,
    };
  };
  const profile = {
    keel: await perTurn(profiled.workflowId, 'callModel'),
    floor: await perTurn(last.get('floor')!, 'floorModel'),
    floorVariants: Object.fromEntries(
      await Promise.all(
        FLOOR_VARIANTS.map(async (v) => [v.name, await perTurn(last.get(v.name)!, 'floorModel')] as const),
      ),
    ),
    keelQueriesPerTurn: Object.fromEntries(
      Object.entries(queries).map(([type, q]) => [
        type,
        { perTurn: q.count / OVERHEAD_TURNS, msEach: q.ms / q.count, messagesPerTurn: q.messages / OVERHEAD_TURNS },
      ]),
    ),
    /** CPU of the workflow code alone (SDK sandbox included): replaying each history in this process. */
    replayCpuMsPerTurn: {
      keel: await replayOf(client, keelBundlePath, profiled.workflowId, 'keel'),
      floor: await replayOf(client, benchBundlePath, last.get('floor')!, 'floor'),
    },
  };
  return {
    turns: OVERHEAD_TURNS,
    keelMsPerTurn: summarize(keel),
    floorMsPerTurn: summarize(floor),
    piMsPerTurn: pi.core ? summarize(piMs) : null,
    pi: pi.core ? { from: pi.from, version: pi.version } : { notInstalled: true, error: pi.error, install: PI_INSTALL },
    keelOverFloor: pairedRatio(keel, floor),
    keelOverPi: pi.core ? pairedRatio(keel, piMs) : null,
    cpuPerTurn: { keel: cpuPerTurn('keel'), floor: cpuPerTurn('floor') },
    /** turns/s this machine could sustain if worker + server CPU per turn were the only limit. */
    cpuCeilingTurnsPerSecond: {
      keel: ceiling(cpuPerTurn('keel')),
      floor: ceiling(cpuPerTurn('floor')),
    },
    floorVariants: FLOOR_VARIANTS.map((v) => ({
      name: v.name,
      options: v.opts,
      msPerTurn: summarize(wall.get(v.name)!),
      overFloor: pairedRatio(wall.get(v.name)!, floor),
      cpuPerTurn: cpuPerTurn(v.name),
    })),
    profile,
    localRead: await localReadResult(wall, floor, cpuPerTurn, (name) => perTurn(last.get(name)!, 'callModel')),
  };
}

export function ceiling(c: { workerMs: Summary; serverMs: Summary | null }): number {
  return (availableParallelism() * 1000) / (c.workerMs.median + (c.serverMs?.median ?? 0));
}

/**
 * The workflow code's cost per turn of one run (bench/replay-cost.ts). With BENCH_CPU_PROF=<dir>, its history is saved
 * there as `<name>-history.json` (for `npx tsx bench/replay-cost.ts`) with a CPU profile of its replays,
 * `replay-<name>.cpuprofile`.
 */
async function replayOf(client: Client, bundlePath: string, workflowId: string, name: string): Promise<ReplayCost> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  const dir = process.env.BENCH_CPU_PROF;
  if (dir) {
    mkdirSync(dir, { recursive: true });
    const workflowType = history.events?.[0]?.workflowExecutionStartedEventAttributes?.workflowType?.name ?? '';
    writeFileSync(
      join(dir, `${name}-history.json`),
      `{"workflowId":${JSON.stringify(workflowId)},"workflowType":${JSON.stringify(workflowType)},"turns":${OVERHEAD_TURNS},"history":${historyToJSON(history)}}\n`,
    );
  }
  return replayCost(
    bundlePath,
    { workflowId, turns: OVERHEAD_TURNS, history },
    dir ? join(dir, `replay-${name}.cpuprofile`) : undefined,
  );
}
