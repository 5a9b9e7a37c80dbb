/**
 * Section 17, limits (`BENCH_ONLY=limits`): what provider limits cost a model call (issue 36 item 3). A worker's
 * limits client (activities/limits/client.ts) against a key's limiter workflow on a Keel worker in this process, at
 * 1,000 and 5,000 requests a minute for BENCH_LIMITS_SECONDS (default 20) each: every simulated call asks, is granted
 * (the key's limits are twice the rate: nothing waits for room, so the time from ask to grant is the overhead), holds
 * its grant 500 ms (the provider call) and settles. Reports the overhead per call (p50, p95), the Updates the limiter
 * took and the history it wrote, per hour.
 */
import { randomUUID } from 'node:crypto';
import { LimitsClient } from '../activities/limits/client.js';
import { limiterWorkflowId, type ProviderLimit } from '../common/limits/definition.js';
import type { LimitAsk } from '../common/limits/ledger.js';
import { createAgentWorker } from '../worker/create-worker.js';
import type { Bench } from './context.js';

const SECONDS = Number(process.env.BENCH_LIMITS_SECONDS ?? 20);
const CALL_MS = 500;

export interface LimitsRateFigures {
  perMinute: number;
  calls: number;
  p50Ms: number;
  p95Ms: number;
  updates: number;
  historyBytesPerHour: number;
}

export interface LimitsResult {
  seconds: number;
  rates: LimitsRateFigures[];
}

const pct = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(xs.length * p))];

export async function limitsSection(b: Bench): Promise<LimitsResult> {
  b.log(`limits: a worker's limits client at 1,000 and 5,000 requests/min for ${SECONDS} s each`);
  const rates: LimitsRateFigures[] = [];
  for (const perMinute of [1_000, 5_000]) {
    const taskQueue = `bench-keel-limits-${perMinute}-${randomUUID().slice(0, 8)}`;
    const worker = await createAgentWorker({
      address: b.server.address,
      taskQueue,
      models: {},
      workflowBundle: { codePath: b.keelBundlePath },
      identity: 'bench-limits',
    });
    const running = worker.run();
    running.catch(() => {});
    try {
      await worker.ready();
      rates.push(await measure(b, taskQueue, perMinute));
    } finally {
      await worker.shutdown();
    }
  }
  return { seconds: SECONDS, rates };
}

async function measure(b: Bench, taskQueue: string, perMinute: number): Promise<LimitsRateFigures> {
  const limit: ProviderLimit = { requestsPerMinute: perMinute * 2 };
  const workflowId = limiterWorkflowId(taskQueue, 'bench');
  const client = new LimitsClient(b.client, taskQueue, workflowId, 'bench', limit);
  const overheads: number[] = [];
  const calls: Promise<void>[] = [];
  const call = async (i: number) => {
    const ask: LimitAsk = {
      request: `bench/${i}/1`,
      attempt: 1,
      priority: 2,
      input: 1_000,
      outputCap: 100,
      holdMs: 60_000,
    };
    const t0 = performance.now();
    await client.ask(ask, { waiting: () => undefined });
    overheads.push(performance.now() - t0);
    await new Promise((r) => setTimeout(r, CALL_MS));
    await client.settle({ request: ask.request, attempt: 1, usage: { input: 1_000, output: 100 } });
  };
  const started = performance.now();
  const total = Math.round((perMinute * SECONDS) / 60);
  for (let i = 0; i < total; i++) {
    const due = started + (i * 60_000) / perMinute;
    const wait = due - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    calls.push(call(i));
  }
  await Promise.all(calls);
  const elapsedMs = performance.now() - started;
  const handle = b.client.workflow.getHandle(workflowId);
  const history = await handle.fetchHistory();
  const updates = history.events!.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
  const described = await handle.describe();
  const bytes = Number(described.raw.workflowExecutionInfo?.historySizeBytes ?? 0);
  const figures: LimitsRateFigures = {
    perMinute,
    calls: overheads.length,
    p50Ms: pct(overheads, 0.5),
    p95Ms: pct(overheads, 0.95),
    updates,
    historyBytesPerHour: Math.round((bytes / elapsedMs) * 3_600_000),
  };
  b.log(
    `  ${perMinute}/min: ${figures.calls} calls, overhead p50 ${figures.p50Ms.toFixed(0)} ms, p95 ${figures.p95Ms.toFixed(0)} ms; ${updates} Updates; history ${(bytes / 1024).toFixed(0)} KiB in ${(elapsedMs / 1000).toFixed(0)} s (${(figures.historyBytesPerHour / 1_048_576).toFixed(0)} MiB/hour before continue-as-new)`,
  );
  return figures;
}
