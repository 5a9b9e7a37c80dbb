/**
 * Section 5 of the bench (`BENCH_ONLY=large`): the 2,000-turn scripted run with 50 KB tool results (≈100 MB of
 * transcript; README "Large transcripts"), the heavy test's run (bench/large-run.ts), on a Keel worker in this process
 * with the filesystem payload store in a temporary directory. Reports turns, runs in the continue-as-new chain, the
 * largest run's history, history bytes per turn, the transcript's size and the time. `BENCH_LARGE_TURNS` (default
 * 2000) sets a smaller turn count for a quick check.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { scriptedModel } from '../activities/model/scripted.js';
import { AgentClient } from '../client/agent-client.js';
import { createAgentWorker } from '../worker/create-worker.js';
import type { Bench } from './context.js';
import { describeLargeRun, LARGE_SCRIPT, largeRunFixture, runLarge, type LargeRunFigures } from './large-run.js';

export const LARGE_TURNS = Math.max(1, Number(process.env.BENCH_LARGE_TURNS ?? 2000));

export async function largeSection(b: Bench): Promise<LargeRunFigures> {
  const { log, server, keelBundlePath } = b;
  log(`large: one ${LARGE_TURNS}-turn Keel run with 50 KB tool results, payloads offloaded to files`);
  const dir = mkdtempSync(join(tmpdir(), 'keel-bench-large-'));
  const taskQueue = 'bench-keel-large';
  const { tool, script } = largeRunFixture(LARGE_TURNS);
  const worker = await createAgentWorker({
    address: server.address,
    taskQueue,
    tools: [tool],
    models: { scripted: scriptedModel({ [LARGE_SCRIPT]: script }) },
    workflowBundle: { codePath: keelBundlePath },
    payloadStorage: { dir },
    identity: 'bench-large',
  });
  const running = worker.run();
  running.catch(() => {});
  const client = await AgentClient.connect({ address: server.address, taskQueue, payloadStorage: { dir } });
  try {
    await worker.ready();
    const { result, figures } = await runLarge(client, LARGE_TURNS);
    if (result.status !== 'completed' || result.turns !== LARGE_TURNS + 1)
      throw new Error(`large run: ${result.status} after ${result.turns} turns (${result.error ?? ''})`);
    log(`  ${describeLargeRun(figures)}`);
    return figures;
  } finally {
    await worker.shutdown();
    await client.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
