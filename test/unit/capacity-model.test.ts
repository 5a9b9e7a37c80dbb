import { describe, expect, it } from 'vitest';
import { capacityPlan, FLEET, fleetReaders, LIMITS, type CapacityInputs } from '../../bench/capacity-model.js';
import { diffCounters, parseCounters, total } from '../../bench/server-metrics.js';

// Round figures, so every output below can be worked out by hand.
const inputs: CapacityInputs = {
  turn: {
    frontendRpcs: 10,
    historyRpcs: 20,
    persistenceRequests: 30,
    serverActions: 3,
    actions: 2,
    historyBytes: 1024,
    workerCpuMs: 7,
    serverCpuMs: 14,
  },
  streaming: {
    frontendRpcs: 4,
    historyRpcs: 2,
    persistenceRequests: 1,
    serverActions: 4,
    workerCpuMs: 1,
    serverCpuMs: 2,
  },
  reader: {
    rpcsPerSecondStreaming: 40,
    rpcsPerSecondIdle: 4,
    queriesPerSecondStreaming: 6,
    queriesPerSecondIdle: 0,
    cpuMsPerSecondStreaming: 100,
    cpuMsPerSecondIdle: 10,
  },
  throughput: { turnsPerSecondPerWorker: 50, workerCpuMsPerTurn: 14, serverCpuMsPerTurn: 28 },
};

describe('capacityPlan', () => {
  it('works out the fleet of docs/capacity.md from the inputs', () => {
    // 10,000 runs, a turn per 10 s of which 5 s stream (half the time), 1,000 readers, cores at 70 %
    const p = capacityPlan(inputs, FLEET, LIMITS);
    expect(p.turnsPerSecond).toBe(1000);
    // runs: 1,000 turns/s × (10 + 4 × 5) RPCs; readers: 1,000 × (½ × 40 + ½ × 4)
    expect(p.rps).toEqual({ runs: 30_000, readers: 22_000, total: 52_000 });
    // 1,000 × (3 + 4 × 5) actions + 1,000 readers × ½ × 6 queries
    expect(p.aps).toBe(26_000);
    expect(p.apsFromHistory).toBe(2000);
    expect(p.cloud).toEqual({ apsOverDefault: 52, rpsOverDefault: 26, fitsDefaults: false });
    // 52,000 / 2,400 = 21.7 → 22 frontends; 1,000 × (20 + 2 × 5) history RPS / 3,000 = 10 history hosts
    expect(p.selfHosted.frontendInstances).toBe(22);
    expect(p.selfHosted.historyInstances).toBe(10);
    expect(p.selfHosted.persistenceRequestsPerSecond).toBe(35_000);
    // 1,000 × (14 + 2 × 5) ms
    expect(p.selfHosted.serverCores).toBeCloseTo(24);
    expect(p.history.bytesPerSecond).toBe(1000 * 1024);
    expect(p.history.gibPerDay).toBeCloseTo((1024_000 * 86_400) / 1024 ** 3);
    // 1,000 × (7 + 1 × 5) ms / 0.7; under load 1,000 × (14 + 1 × 5) ms / 0.7; 1,000 turns/s ÷ 50 per process
    expect(p.workers.cores).toBeCloseTo(12 / 0.7);
    expect(p.workers.coresAtLoad).toBeCloseTo(19 / 0.7);
    expect(p.workers.processesAtMeasuredRate).toBe(20);
    // 1,000 readers × (½ × 100 + ½ × 10) ms / 0.7
    expect(p.readerCores).toBeCloseTo(55 / 0.7);
  });

  it('fits the Cloud defaults when the load is small, and counts streaming no longer than a turn', () => {
    const p = capacityPlan(inputs, {
      runs: 100,
      secondsPerTurn: 10,
      streamingSecondsPerTurn: 20,
      readers: 10,
      coreUtilization: 1,
    });
    // streaming counted for the 10 s of the turn: 10 turns/s × (10 + 4 × 10) = 500; readers all streaming: 10 × 40
    expect(p.rps).toEqual({ runs: 500, readers: 400, total: 900 });
    // 10 × (3 + 4 × 10) + 10 × 6
    expect(p.aps).toBe(490);
    expect(p.cloud.fitsDefaults).toBe(true);
    expect(p.readerCores).toBeCloseTo(1);
  });
});

describe('fleetReaders', () => {
  it('readers on the fleet transport: the measured cost per turn of their runs, one describe a second while not streaming', () => {
    // 1,000 readers, a turn every 10 s (100 turns/s): 100 × 2 RPCs + 1,000 × 0.5 × 1 describe/s
    const r = fleetReaders({ rpcsPerTurn: 2, queriesPerTurn: 1, cpuMsPerTurn: 14 }, FLEET);
    expect(r.rps).toBe(700);
    expect(r.aps).toBe(100);
    expect(r.readerCores).toBeCloseTo(1.4 / 0.7);
  });
});

describe('server counters', () => {
  const metrics = (start: number) =>
    [
      '# HELP service_requests service_requests',
      `service_requests{namespace="default",operation="PollWorkflowTaskQueue",service_name="frontend"} ${start}`,
      `service_requests{namespace="default",operation="PollWorkflowTaskQueue",service_name="matching"} ${start}`,
      `service_requests{namespace="default",operation="RecordWorkflowTaskStarted",service_name="history"} ${start}`,
      `service_requests{namespace="temporal_system",operation="StartWorkflowExecution",service_name="frontend"} 9`,
      `persistence_requests{namespace="default",operation="UpdateWorkflowExecution",service_name="history"} ${start * 2}`,
      `action{action_type="grpc_StartWorkflowExecution",namespace="default",operation="StartWorkflowExecution",service_name="frontend"} ${start}`,
      'service_latency_count{namespace="default",operation="PollWorkflowTaskQueue",service_name="frontend"} 99',
    ].join('\n');

  it("reads one namespace's requests by service and operation, persistence requests and actions", () => {
    expect(parseCounters(metrics(3))).toEqual({
      frontend: { PollWorkflowTaskQueue: 3 },
      history: { RecordWorkflowTaskStarted: 3 },
      matching: 3,
      persistence: 6,
      actions: { 'frontend/grpc_StartWorkflowExecution': 3 },
    });
    expect(parseCounters(metrics(3), 'temporal_system').frontend).toEqual({ StartWorkflowExecution: 9 });
  });

  it('keeps what was counted between two readings', () => {
    const d = diffCounters(parseCounters(metrics(3)), parseCounters(metrics(10)));
    expect(d).toEqual({
      frontend: { PollWorkflowTaskQueue: 7 },
      history: { RecordWorkflowTaskStarted: 7 },
      matching: 7,
      persistence: 14,
      actions: { 'frontend/grpc_StartWorkflowExecution': 7 },
    });
    expect(total({ a: 1, b: 2 })).toBe(3);
  });
});
