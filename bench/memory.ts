/** Section 4 of the bench: worker memory per parked session, against a minimal parked workflow. */
import { randomUUID } from 'node:crypto';
import { AgentClient } from '../client/agent-client.js';
import { QUEUE } from './fixtures.js';
import { fmtBytes, summarize, type Summary } from './stats.js';
import { type WorkerProcess } from './workers.js';
import type { Bench } from './context.js';
import { keelInput, keelRun, waitUntil, pool } from './runs.js';

const SESSION_COUNTS = [0, 100, 500];
/** Parked minimal workflows for the engine floor's per-workflow memory (its slope between the last two points). */
export const FLOOR_PARKED = [0, 100, 300];

export async function memorySection(b: Bench) {
  const { log, client, main, spawnWorker } = b;
  log(
    `memory: fresh worker processes; RSS with ${SESSION_COUNTS.join(', ')} parked sessions (Keel), and ${FLOOR_PARKED.join(', ')} parked minimal workflows (engine floor)`,
  );
  // Engine floor: a minimal workflow that does one model + one tool round trip and waits for a signal.
  const fw = spawnWorker('memory-floor', [], QUEUE.benchMem, true);
  await fw.ready;
  for (let i = 0; i < 5; i++)
    await client.workflow.execute('floorWorkflow', {
      taskQueue: QUEUE.benchMem,
      workflowId: `bench-floor-${randomUUID()}`,
      args: [2, {}],
    });
  const floorPoints: { sessions: number; rss: Summary }[] = [];
  const parked: string[] = [];
  for (const count of FLOOR_PARKED) {
    const ids = Array.from({ length: count - parked.length }, () => `bench-parked-${randomUUID()}`);
    await pool(ids, 50, (id) =>
      client.workflow.start('parkedWorkflow', { taskQueue: QUEUE.benchMem, workflowId: id, args: [] }),
    );
    // waiting once the third workflow task completed (16 events)
    const pending = new Set(ids);
    await waitUntil(
      log,
      async () => {
        await pool([...pending], 50, async (id) =>
          (await client.workflow.getHandle(id).describe()).historyLength >= 16 ? pending.delete(id) : undefined,
        );
        return pending.size === 0;
      },
      'parked workflows waiting',
    );
    parked.push(...ids);
    floorPoints.push({ sessions: count, rss: await rssSamples(fw) });
    log(`  floor: ${count} parked: RSS ${fmtBytes(floorPoints[floorPoints.length - 1].rss.median)}`);
  }
  await fw.stop();
  await pool(parked, 50, (id) =>
    client.workflow
      .getHandle(id)
      .terminate('bench done')
      .catch(() => undefined),
  );

  const w = spawnWorker('memory', [QUEUE.keelMem], undefined, true);
  log(`worker process memory pid ${await w.ready}`);
  const agent = new AgentClient(client, QUEUE.keelMem);
  for (let i = 0; i < 5; i++) await keelRun(agent, keelInput('bench-hello', [], 5));
  const sessions: string[] = [];
  const points: { sessions: number; rss: Summary; heapUsed: Summary }[] = [];
  let transcriptBytes = 0;
  for (const count of SESSION_COUNTS) {
    const ids = Array.from({ length: count - sessions.length }, () => `bench-session-${randomUUID()}`);
    await pool(ids, 50, (id) =>
      agent.start(keelInput('bench-hello', [], 5, { mode: 'session', idleTimeout: '1h' }), { workflowId: id }),
    );
    sessions.push(...ids);
    if (sessions.length > 0) {
      await waitUntil(
        log,
        async () =>
          (await client.workflow.count(`TaskQueue = "${QUEUE.keelMem}" AND KeelStatus = "waiting"`)).count >=
          sessions.length,
        'sessions waiting',
      );
      transcriptBytes ||= Buffer.byteLength(JSON.stringify(await agent.getHandle(sessions[0]).allMessages()));
    }
    const heap: number[] = [];
    points.push({ sessions: count, rss: await rssSamples(w, heap), heapUsed: summarize(heap) });
    log(`  Keel: ${count} parked sessions: RSS ${fmtBytes(points[points.length - 1].rss.median)}`);
  }
  log(`  terminating ${sessions.length} sessions`);
  await w.stop();
  await pool(sessions, 50, (id) =>
    client.workflow
      .getHandle(id)
      .terminate('bench done')
      .catch(() => undefined),
  );
  const p0 = points[0];
  const pLast = points[points.length - 1];
  const pMid = points[1];
  const perSession = (pLast.rss.median - p0.rss.median) / pLast.sessions;
  const slope = (a: { sessions: number; rss: Summary }, b: { sessions: number; rss: Summary }) =>
    (b.rss.median - a.rss.median) / (b.sessions - a.sessions);
  const floorPerSession = slope(floorPoints[floorPoints.length - 2], floorPoints[floorPoints.length - 1]);
  const keelSlope = slope(pMid, pLast);
  return {
    points,
    floorPoints,
    transcriptBytesPerSession: transcriptBytes,
    rssPerSessionBytes: perSession,
    rssPerSessionSlopeBytes: keelSlope,
    /** Slope between the floor's last two points. */
    floorRssPerSessionBytes: floorPerSession,
    beyondTranscriptBytes: perSession - transcriptBytes,
    /** Keel's slope (100→500) minus the floor's. */
    beyondFloorBytes: keelSlope - floorPerSession,
    note: 'VmRSS of a fresh worker process after two forced GCs of its main thread (--expose-gc; the workflow thread is not forced); 5 samples 200 ms apart',
  };
}

async function rssSamples(w: WorkerProcess, heap: number[] = []): Promise<Summary> {
  await new Promise((r) => setTimeout(r, 1000));
  const rss: number[] = [];
  for (let i = 0; i < 5; i++) {
    const m = await w.rss();
    rss.push(m.rssBytes);
    heap.push(m.heapUsed);
    await new Promise((r) => setTimeout(r, 200));
  }
  return summarize(rss);
}
