/**
 * agentBatchWorkflow (docs/architecture.md#batches) and `keel batch`: durable fan-out of agent runs as child workflows with a
 * concurrency limit, continue-as-new, a `progress` query, failures recorded not fatal, results in input order.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { WorkflowHandle } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { startBatch } from '../../cli/commands/batch.js';
import type { AgentRunInput } from '../../common/run.js';
import {
  progressQuery,
  resultsQuery,
  type AgentBatchResult,
  type BatchProgress,
} from '../../workflows/batch/definitions.js';
import { eventName, startKeel, until, workflowTaskFailures, type Keel } from './harness.js';

const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHILD_WORKER = fileURLToPath(new URL('./fixtures/child-worker.ts', import.meta.url));
const children: ChildProcess[] = [];

afterAll(() => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
});

function keelCli(args: string[]): {
  child: ChildProcess;
  done: Promise<{ code: number | null; stdout: string; stderr: string }>;
} {
  const child = spawn(process.execPath, [BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) =>
    child.on('close', (code) => resolve({ code, stdout, stderr })),
  );
  return { child, done };
}

/** A Keel worker in its own process (test/temporal/fixtures/child-worker.ts), so the test can SIGKILL it. */
function startWorkerProcess(taskQueue: string, dir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD_WORKER], {
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: inject('temporalAddress'),
      KEEL_TASK_QUEUE: taskQueue,
      KEEL_BUNDLE: inject('workflowBundlePath'),
      KEEL_SIDE_EFFECTS: join(dir, 'effects.log'),
      KEEL_HANG: '0',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => d.toString().includes('ready') && resolve(child));
    child.on('exit', (code) => reject(new Error(`worker process exited with ${code}`)));
  });
}

function kill(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGKILL');
  });
}

function readLines(file: string): Record<string, unknown>[] {
  return readFileSync(file, 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** `progress` snapshots, polled until `stop()`; query failures (no worker for a moment) are skipped. */
function recordProgress(handle: WorkflowHandle) {
  const snapshots: BatchProgress[] = [];
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      try {
        snapshots.push(
          await handle.client.connection.withDeadline(Date.now() + 3000, () => handle.query(progressQuery)),
        );
      } catch {
        // not started yet, or no worker right now
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  return {
    snapshots,
    async stop() {
      stopped = true;
      await loop;
    },
  };
}

function expectMonotone(snapshots: BatchProgress[], total: number): void {
  expect(snapshots.length).toBeGreaterThan(3);
  for (const [i, p] of snapshots.entries()) {
    expect(p.done + p.failed + p.running + p.queued, JSON.stringify(p)).toBe(total);
    if (i === 0) continue;
    const q = snapshots[i - 1];
    expect(p.done + p.failed, `finished went back: ${JSON.stringify(q)} → ${JSON.stringify(p)}`).toBeGreaterThanOrEqual(
      q.done + q.failed,
    );
    expect(p.done).toBeGreaterThanOrEqual(q.done);
    expect(p.queued).toBeLessThanOrEqual(q.queued);
    expect(p.tokens).toBeGreaterThanOrEqual(q.tokens);
  }
}

async function countChildren(client: AgentClient, taskQueue: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const w of client.client.workflow.list({
    query: `TaskQueue = '${taskQueue}' AND WorkflowType = 'agentWorkflow'`,
  }))
    ids.push(w.workflowId);
  return ids;
}

describe('agentBatchWorkflow with `keel batch`', () => {
  it('50 tasks, concurrency 5, worker killed and restarted midway: 50 results in order, none duplicated, progress monotone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-batch-durable-'));
    const taskQueue = `batch-durable-${randomUUID()}`;
    const rules = join(dir, 'rules.json');
    writeFileSync(
      rules,
      JSON.stringify({
        rules: [{ text: 'task finished fine ok', chunkDelayMs: 120, usage: { input: 3, output: 4, totalTokens: 7 } }],
      }),
    );
    const tasks = Array.from({ length: 50 }, (_, i) => ({
      model: `scripted/${rules}`,
      prompt: `task ${i}`,
      heartbeatTimeout: '2s',
    }));
    writeFileSync(join(dir, 'tasks.jsonl'), tasks.map((t) => JSON.stringify(t)).join('\n'));
    const batchId = `batch-durable-${randomUUID()}`;
    const out = join(dir, 'results.jsonl');
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });

    const first = await startWorkerProcess(taskQueue, dir);
    const cli = keelCli([
      '--address',
      inject('temporalAddress'),
      '--task-queue',
      taskQueue,
      'batch',
      join(dir, 'tasks.jsonl'),
      '--concurrency',
      '5',
      '--out',
      out,
      '--id',
      batchId,
      '--can-after-tasks',
      '20',
    ]);
    const handle = client.client.workflow.getHandle(batchId);
    await until(
      async () =>
        await handle.describe().then(
          () => true,
          () => false,
        ),
      30_000,
      'batch started',
    );
    const progress = recordProgress(handle);
    await until(() => progress.snapshots.some((p) => p.done >= 15), 60_000, '15 tasks done');
    const before = progress.snapshots.at(-1)!;
    expect(before.running).toBeGreaterThan(0);
    await kill(first);
    await new Promise((r) => setTimeout(r, 1000)); // not a synchronisation: a second with no worker at all (an outage)
    const second = await startWorkerProcess(taskQueue, dir);

    const r = await cli.done;
    await progress.stop();
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0);
    expect(r.stdout).toContain(`Temporal UI: http://localhost:8233/namespaces/default/workflows/${batchId}`);
    const lines = readLines(out);
    // 7 tokens per model attempt: 350 for the 50 answers, plus 7 for each attempt lost mid-stream with the killed
    // worker (a lost attempt's streamed usage counts, README "Budgets"); the batch's total is the sum of its tasks'
    const perTask = lines.map((l) => (l.usage as { totalTokens: number }).totalTokens);
    expect(perTask.filter((t) => t % 7 !== 0 || t < 7)).toEqual([]);
    const tokens = perTask.reduce((a, b) => a + b, 0);
    expect(tokens).toBeGreaterThanOrEqual(350);
    expect(r.stdout).toContain(`✔ 50/50 done · 0 failed · ${tokens} tokens`);
    expect(lines.map((l) => l.index)).toEqual(tasks.map((_, i) => i));
    expect(lines.map((l) => l.workflowId)).toEqual(tasks.map((_, i) => `${batchId}-${i}`));
    expect(new Set(lines.map((l) => l.status))).toEqual(new Set(['completed']));
    lines.forEach((l, i) => {
      const messages = l.newMessages as { role: string; content: { text: string }[] }[];
      expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
      expect(messages[0].content[0].text).toBe(`task ${i}`);
      expect(messages[1].content[0].text).toBe('task finished fine ok');
    });

    const summary = (await handle.result()) as AgentBatchResult;
    expect(summary).toMatchObject({
      total: 50,
      done: 50,
      failed: 0,
      byStatus: { completed: 50 },
      tokens,
      failures: [],
    });
    expect(summary.continuedAsNew).toBeGreaterThanOrEqual(2);
    // one execution per child id: nothing was started twice
    await until(async () => (await countChildren(client, taskQueue)).length >= 50, 20_000, 'visibility');
    const ids = await countChildren(client, taskQueue);
    expect(ids).toHaveLength(50);
    expect(new Set(ids).size).toBe(50);

    // the polled snapshots may stop short of the end (a query waits on the killed worker's sticky queue for longer
    // than the poller's 3 s deadline until the run moves): the finished run answers one more
    const final = await handle.query(progressQuery);
    expectMonotone([...progress.snapshots, final], 50);
    expect(final).toMatchObject({ done: 50, failed: 0, running: 0, queued: 0, phase: 'finished' });
    await kill(second);
    await client.close();
  }, 240_000);

  describe('in-process worker', () => {
    let k: Keel;
    beforeAll(async () => {
      k = await startKeel({
        scripts: {
          tiny: {
            rules: [
              { match: 'break', text: 'no', stopReason: 'error', errorMessage: 'scripted failure' },
              {
                text: 'ok',
                usage: {
                  input: 1,
                  output: 1,
                  totalTokens: 2,
                  cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0.0001 },
                },
              },
            ],
          },
        },
      });
    });
    afterAll(() => k?.stop());

    const measure = async (count: number, concurrency: number, canAfterTasks: number) => {
      const tasks: AgentRunInput[] = Array.from({ length: count }, (_, i) => ({
        model: 'scripted/tiny',
        prompt: `t${i}`,
      }));
      const began = Date.now();
      const handle = await startBatch(k.client, k.taskQueue, tasks, {
        concurrency,
        continueAsNewAfterTasks: canAfterTasks,
        batchId: `batch-${count}-${concurrency}-${randomUUID()}`,
      });
      const progress = recordProgress(handle);
      const summary = (await handle.result()) as AgentBatchResult;
      await progress.stop();
      const minutes = (Date.now() - began) / 60_000;
      const rate = count / minutes;
      console.log(
        `[batch] ${count} tasks at concurrency ${concurrency}: ${(minutes * 60).toFixed(1)} s, ${rate.toFixed(0)} tasks/min, continued-as-new ${summary.continuedAsNew}×`,
      );
      return { handle, summary, progress, rate };
    };

    it('2,000 tiny tasks at concurrency 20 complete, the parent continuing-as-new', async () => {
      const { handle, summary, progress } = await measure(2000, 20, 400);
      expect(summary).toMatchObject({
        total: 2000,
        done: 2000,
        failed: 0,
        byStatus: { completed: 2000 },
        tokens: 4000,
        cost: 0.2,
      });
      expect(summary.continuedAsNew).toBeGreaterThanOrEqual(4);
      expectMonotone(progress.snapshots, 2000);
      expect(Math.max(...progress.snapshots.map((p) => p.running))).toBeLessThanOrEqual(20);
      // compact per-task outcomes from the batch, full results from each child
      const page = await handle.query(resultsQuery, { from: 1990, limit: 20 });
      expect(page.total).toBe(2000);
      expect(page.results.map((r) => [r.index, r.status, r.turns, r.tokens])).toEqual(
        Array.from({ length: 10 }, (_, i) => [1990 + i, 'completed', 1, 2]),
      );
      const child = await k.client.getHandle(`${handle.workflowId}-1999`).result();
      expect(child.finalText).toBe('ok');
    }, 900_000);

    it('throughput at concurrency 5', async () => {
      const count = Number(process.env.KEEL_BATCH_C5_TASKS ?? 300);
      const { summary } = await measure(count, 5, 100);
      expect(summary).toMatchObject({ total: count, done: count, failed: 0 });
      expect(summary.continuedAsNew).toBeGreaterThanOrEqual(1);
    }, 900_000);

    it('tasks by page reference, failures recorded not fatal, `keel batch` writes every line in input order', async () => {
      const dir = mkdtempSync(join(tmpdir(), 'keel-batch-pages-'));
      const lines = Array.from({ length: 60 }, (_, i) =>
        i === 7
          ? { prompt: `task ${i} break`, model: 'scripted/tiny' }
          : i === 33
            ? { prompt: `task ${i}`, model: 'scripted/tiny', tools: ['ghost'] }
            : `task ${i}`,
      );
      writeFileSync(join(dir, 'tasks.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n'));
      const batchId = `batch-pages-${randomUUID()}`;
      const out = join(dir, 'out.jsonl');
      const cli = keelCli([
        '--address',
        k.address,
        '--task-queue',
        k.taskQueue,
        'batch',
        join(dir, 'tasks.jsonl'),
        '--model',
        'scripted/tiny',
        '--concurrency',
        '6',
        '--page-size',
        '25',
        '--can-after-tasks',
        '20',
        '--id',
        batchId,
        '--out',
        out,
      ]);
      const r = await cli.done;
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(1); // some tasks failed
      expect(r.stdout).toMatch(/✘ 58\/60 done · 2 failed/);
      const results = readLines(out);
      expect(results.map((l) => l.index)).toEqual(lines.map((_, i) => i));
      results.forEach((l, i) => {
        if (i === 7)
          expect(l).toMatchObject({
            status: 'failed',
            failureType: 'AgentRunFailed',
            error: 'scripted failure',
            finalText: 'no',
            turns: 1,
          });
        else if (i === 33) {
          expect(l).toMatchObject({ status: 'failed', failureType: 'InvalidAgentInput' });
          expect(l.error).toMatch(/^Invalid AgentRunInput: tools: unknown "ghost"/);
        } else {
          expect(l.status).toBe('completed');
          expect((l.newMessages as { content: { text: string }[] }[])[0].content[0].text).toBe(`task ${i}`);
        }
      });
      const handle = k.client.client.workflow.getHandle(batchId);
      const summary = (await handle.result()) as AgentBatchResult;
      expect(summary).toMatchObject({ total: 60, done: 58, failed: 2, byStatus: { completed: 58, failed: 2 } });
      expect(summary.failures.map((f) => [f.index, f.status])).toEqual([
        [7, 'failed'],
        [33, 'failed'],
      ]);
      expect(summary.failures[1].error).toMatch(/InvalidAgentInput|Invalid AgentRunInput/);
      expect(summary.continuedAsNew).toBeGreaterThanOrEqual(2);
      // the page holders were released when the batch finished
      for (const n of [0, 1, 2])
        expect(await k.client.client.workflow.getHandle(`${batchId}-page-${n}`).result()).toEqual({ released: true });

      const status = spawn(process.execPath, [BIN, '--address', k.address, '--json', 'status', batchId], { cwd: ROOT });
      let text = '';
      status.stdout!.on('data', (d: Buffer) => (text += d.toString()));
      const code = await new Promise((resolve) => status.on('close', resolve));
      expect(code).toBe(1);
      expect(JSON.parse(text)).toMatchObject({
        workflowId: batchId,
        workflowType: 'agentBatchWorkflow',
        temporalStatus: 'completed',
        result: { total: 60, failed: 2 },
      });
    }, 300_000);

    it('is deterministic: a worker caching no workflow (every task replays) and a replay of each run of the chain', async () => {
      const cold = await startKeel({
        scripts: {
          tiny: { rules: [{ match: 'break', text: 'no', stopReason: 'error', errorMessage: 'x' }, { text: 'ok' }] },
        },
        maxCachedWorkflows: 0,
      });
      try {
        const tasks: AgentRunInput[] = Array.from({ length: 24 }, (_, i) => ({
          model: 'scripted/tiny',
          prompt: i % 7 === 3 ? `break ${i}` : `t${i}`,
        }));
        const handle = await startBatch(cold.client, cold.taskQueue, tasks, {
          concurrency: 4,
          pageSize: 10,
          continueAsNewAfterTasks: 9,
          batchId: `batch-cold-${randomUUID()}`,
        });
        const summary = (await handle.result()) as AgentBatchResult;
        expect(summary).toMatchObject({ total: 24, done: 21, failed: 3 });
        expect(summary.failures.map((f) => f.index)).toEqual([3, 10, 17]);
        expect(summary.continuedAsNew).toBeGreaterThanOrEqual(2);
        // replay every run of the continue-as-new chain with the current code
        const runs: string[] = [];
        for await (const w of cold.client.client.workflow.list({ query: `WorkflowId = '${handle.workflowId}'` }))
          runs.push(w.runId);
        expect(runs.length).toBe(summary.continuedAsNew + 1);
        // a worker that caches no workflow would drop a local activity in flight (its task then times out, 10 s):
        // its batch starts every task not lean, each checking its input in an activity (0.12.0)
        const checks: string[] = [];
        for (const runId of runs) {
          const events = (await cold.client.client.workflow.getHandle(handle.workflowId, runId).fetchHistory()).events!;
          checks.push(...events.map(eventName).filter((n) => n.includes('checkBatchStart')));
        }
        expect(checks).toEqual(['ACTIVITY_TASK_SCHEDULED checkBatchStart']); // asked once; its answer carried on
        for (const i of [0, 3, 23]) {
          const child = cold.client.client.workflow.getHandle(`${handle.workflowId}-${i}`);
          expect((await child.describe()).memo?.keelBatch).not.toHaveProperty('leanStart');
          const names = (await child.fetchHistory()).events!.map(eventName);
          expect(names.filter((n) => /startRun|TIMED_OUT/.test(n))).toEqual(['ACTIVITY_TASK_SCHEDULED startRun']);
        }
        for (const runId of runs) {
          const history = await cold.client.client.workflow.getHandle(handle.workflowId, runId).fetchHistory();
          await Worker.runReplayHistory(
            { workflowBundle: { codePath: inject('workflowBundlePath') } },
            history,
            handle.workflowId,
          );
        }
      } finally {
        await cold.stop();
      }
    }, 300_000);

    it('a malformed batch input fails at once, naming the fields', async () => {
      const handle = await k.client.client.workflow.start('agentBatchWorkflow', {
        taskQueue: k.taskQueue,
        workflowId: `batch-bad-${randomUUID()}`,
        args: [{ tasks: 'nope', concurrency: 0 }],
      });
      const err = await handle.result().catch((e: Error) => e);
      expect(String((err as { cause?: Error }).cause?.message)).toBe(
        'Invalid AgentBatchInput: tasks: must be an array of AgentRunInput, or { pages: [{ workflowId, count }] }; concurrency: must be an integer >= 1',
      );
      expect(await workflowTaskFailures(handle)).toEqual([]);
    });
  });
});
