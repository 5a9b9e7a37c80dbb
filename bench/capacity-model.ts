/**
 * The capacity model of docs/capacity.md: from what one turn and one live reader cost (measured by bench/capacity.ts,
 * never written in here), what a fleet of concurrent runs and readers needs from Temporal (requests and actions per
 * second against Temporal Cloud's namespace defaults, frontend and history instances of a self-hosted cluster at their
 * default per-instance rate limits), from the workers (cores, processes) and from the readers' processes. Pure
 * arithmetic: test/unit/capacity-model.test.ts checks it.
 */

/** What a piece of work costs Temporal and the worker: per turn, or per second a model call streams. */
export interface WorkCost {
  /** Temporal frontend requests (every worker and client RPC, polls included). */
  frontendRpcs: number;
  /** History-service requests inside the cluster. */
  historyRpcs: number;
  /** Persistence (database) requests of every service. */
  persistenceRequests: number;
  /**
   * The server's `action` counter: every billable action, heartbeats and queries included (Temporal Cloud bills
   * "recording a Heartbeat" and queries as actions: docs.temporal.io/cloud/actions).
   */
  serverActions: number;
  workerCpuMs: number;
  /** The dev server's CPU (every service and its in-memory SQLite in one process). */
  serverCpuMs: number;
}

/** What the bench measured; every figure comes from bench/capacity.ts's run. */
export interface CapacityInputs {
  /** One plain turn (a model call and one tool call, no streaming, nobody reading). */
  turn: WorkCost & {
    /** Billable actions the history annotates (bench/actions.ts: no heartbeats, no queries). */
    actions: number;
    historyBytes: number;
  };
  /** What a streaming model call adds, per second it streams (its heartbeats carry the deltas). */
  streaming: WorkCost;
  /** One `handle.stream()` reader: while its run streams, and while its run waits for input. */
  reader: {
    rpcsPerSecondStreaming: number;
    rpcsPerSecondIdle: number;
    /** Its `events` queries (each one an action). */
    queriesPerSecondStreaming: number;
    queriesPerSecondIdle: number;
    cpuMsPerSecondStreaming: number;
    cpuMsPerSecondIdle: number;
  };
  /** Measured throughput: turns per second one worker process sustained under load, and its CPU per turn there. */
  throughput: { turnsPerSecondPerWorker: number; workerCpuMsPerTurn: number; serverCpuMsPerTurn: number };
}

/** The fleet to size for. */
export interface FleetLoad {
  /** Runs in progress at once. */
  runs: number;
  /** Seconds between two turns of one run (model latency + tool time): each run makes 1 / secondsPerTurn turns/s. */
  secondsPerTurn: number;
  /** Of those, the seconds the model streams its reply (at most `secondsPerTurn`). */
  streamingSecondsPerTurn: number;
  /** Live `handle.stream()` readers, each on one of the runs. */
  readers: number;
  /** Share of a worker core to plan for (headroom for bursts, GC, replays after a restart). */
  coreUtilization: number;
}

/**
 * Documented limits. Temporal Cloud namespace defaults: docs.temporal.io/cloud/limits ("Actions per second: default
 * limit 500", "Requests per second: default limit 2000"; both raise automatically with the last 7 days of use).
 * Self-hosted per-instance rate limits, the server's dynamic-config defaults (docs.temporal.io/references/
 * dynamic-configuration, which points at common/dynamicconfig/constants.go): `frontend.rps` and
 * `frontend.namespaceRPS` 2400 per frontend instance, `history.rps` 3000 per history host.
 */
export const LIMITS = {
  cloudActionsPerSecond: 500,
  cloudRequestsPerSecond: 2000,
  frontendRpsPerInstance: 2400,
  historyRpsPerInstance: 3000,
} as const;

export type Limits = typeof LIMITS;

/** The load the docs work out: 10,000 concurrent runs, a turn every 10 s of which 5 s stream, 1,000 live readers. */
export const FLEET: FleetLoad = {
  runs: 10_000,
  secondsPerTurn: 10,
  streamingSecondsPerTurn: 5,
  readers: 1_000,
  coreUtilization: 0.7,
};

export interface CapacityPlan {
  turnsPerSecond: number;
  /** Temporal frontend requests per second: the runs' (plain turns + streaming heartbeats), the readers', total. */
  rps: { runs: number; readers: number; total: number };
  /** Billable actions per second (the server's counter: the runs', heartbeats included, and the readers' queries). */
  aps: number;
  /** The runs' actions per second as their histories annotate them (no heartbeats, no queries). */
  apsFromHistory: number;
  /** Temporal Cloud: the namespace defaults' multiples needed (≤ 1: fits the default). */
  cloud: { apsOverDefault: number; rpsOverDefault: number; fitsDefaults: boolean };
  /** Self-hosted: instances at the default per-instance rate limits, database requests/s, server cores (dev server). */
  selfHosted: {
    frontendInstances: number;
    historyInstances: number;
    persistenceRequestsPerSecond: number;
    serverCores: number;
  };
  /** History written per second and per day (until retention removes closed runs). */
  history: { bytesPerSecond: number; gibPerDay: number };
  /**
   * Worker cores at `coreUtilization` from the CPU of a turn run alone and of one under load (streaming added to both),
   * and the worker processes the measured turns/s of one process gives for plain turns.
   */
  workers: { cores: number; coresAtLoad: number; processesAtMeasuredRate: number };
  /** Cores of the processes that hold the readers. */
  readerCores: number;
}

/** The fleet's needs from the measured inputs (all rates are steady-state averages). */
export function capacityPlan(inputs: CapacityInputs, load: FleetLoad = FLEET, limits: Limits = LIMITS): CapacityPlan {
  const tps = load.runs / load.secondsPerTurn;
  const streamingSeconds = Math.min(load.streamingSecondsPerTurn, load.secondsPerTurn);
  const streamShare = streamingSeconds / load.secondsPerTurn;
  const { turn, streaming, reader, throughput } = inputs;
  /** Per second of the fleet's runs: a turn's cost and its streaming's, `tps` times. */
  const runs = (k: keyof WorkCost) => tps * (turn[k] + streaming[k] * streamingSeconds);
  /** Per second of the readers: their runs stream `streamShare` of the time and wait the rest. */
  const readers = (streamingRate: number, idleRate: number) =>
    load.readers * (streamShare * streamingRate + (1 - streamShare) * idleRate);
  const runsRps = runs('frontendRpcs');
  const readerRps = readers(reader.rpcsPerSecondStreaming, reader.rpcsPerSecondIdle);
  const rps = runsRps + readerRps;
  const aps = runs('serverActions') + readers(reader.queriesPerSecondStreaming, reader.queriesPerSecondIdle);
  const streamedWorkerCpu = streaming.workerCpuMs * streamingSeconds;
  const bytesPerSecond = tps * turn.historyBytes;
  return {
    turnsPerSecond: tps,
    rps: { runs: runsRps, readers: readerRps, total: rps },
    aps,
    apsFromHistory: tps * turn.actions,
    cloud: {
      apsOverDefault: aps / limits.cloudActionsPerSecond,
      rpsOverDefault: rps / limits.cloudRequestsPerSecond,
      fitsDefaults: aps <= limits.cloudActionsPerSecond && rps <= limits.cloudRequestsPerSecond,
    },
    selfHosted: {
      frontendInstances: Math.ceil(rps / limits.frontendRpsPerInstance),
      historyInstances: Math.ceil(runs('historyRpcs') / limits.historyRpsPerInstance),
      persistenceRequestsPerSecond: runs('persistenceRequests'),
      serverCores: runs('serverCpuMs') / 1000,
    },
    history: { bytesPerSecond, gibPerDay: (bytesPerSecond * 86_400) / 1024 ** 3 },
    workers: {
      cores: runs('workerCpuMs') / 1000 / load.coreUtilization,
      coresAtLoad: (tps * (throughput.workerCpuMsPerTurn + streamedWorkerCpu)) / 1000 / load.coreUtilization,
      processesAtMeasuredRate: Math.ceil(tps / throughput.turnsPerSecondPerWorker),
    },
    readerCores: readers(reader.cpuMsPerSecondStreaming, reader.cpuMsPerSecondIdle) / 1000 / load.coreUtilization,
  };
}

/**
 * One reader on the fleet stream transport (docs/live-output.md#fleet-transport), measured by bench/fleet-stream.ts:
 * its own Temporal RPCs and `events` queries per turn of its run (the deltas come from the stream store), its CPU per
 * turn.
 */
export interface FleetReaderCost {
  rpcsPerTurn: number;
  queriesPerTurn: number;
  cpuMsPerTurn: number;
}

/**
 * Describes per second of a fleet-transport reader while its run does not stream (tools run, or it waits): at most one
 * (client/fleet-stream/store-reader.ts backs off to once a second while the store is quiet).
 */
export const FLEET_READER_IDLE_RPS = 1;

/**
 * What `load.readers` readers need on the fleet transport, in place of the plan's `rps.readers`, the queries in its
 * `aps` and its `readerCores`: per turn of each reader's run the measured cost, and while the run does not stream at
 * most {@link FLEET_READER_IDLE_RPS} describes a second.
 */
export function fleetReaders(
  cost: FleetReaderCost,
  load: FleetLoad = FLEET,
): { rps: number; aps: number; readerCores: number } {
  const streamingSeconds = Math.min(load.streamingSecondsPerTurn, load.secondsPerTurn);
  const quietShare = 1 - streamingSeconds / load.secondsPerTurn;
  const turnRate = load.readers / load.secondsPerTurn;
  return {
    rps: turnRate * cost.rpcsPerTurn + load.readers * quietShare * FLEET_READER_IDLE_RPS,
    aps: turnRate * cost.queriesPerTurn,
    readerCores: (turnRate * cost.cpuMsPerTurn) / 1000 / load.coreUtilization,
  };
}
