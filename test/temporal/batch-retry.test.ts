/**
 * `keel batch retry` / `results --merge` / `describe` (issue 27 item 3): a batch with failed and completed tasks → the
 * retry runs only the failed ones (same task definitions), under `<batchId>-retry-1` with the memo `keelRetryOf`; the
 * first batch's describe finds it; the merged results are in input order with the retried tasks' results in place.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ScriptedRule } from '../../activities/model/scripted.js';
import { startBatchWorkflow } from '../../client/batch-client.js';
import { batchInputOf, RETRY_MEMO_KEY } from '../../client/batch-retry.js';
import type { AgentBatchResult } from '../../common/batch-definitions.js';
import { startKeel, type Keel } from './harness.js';
import { keelAt, TEST_UI as UI } from './cli-child.js';

const fail: ScriptedRule = { match: 'break', text: 'no', stopReason: 'error', errorMessage: 'scripted failure' };
const rules: ScriptedRule[] = [fail, ...[0, 1, 2, 3, 4].map((i) => ({ match: `task ${i}`, text: `answer ${i}` }))];

describe('keel batch retry', () => {
  let k: Keel;
  beforeAll(async () => {
    k = await startKeel({
      scripts: {
        r: { rules },
        p: {
          rules: [
            { match: 'fails', text: 'no', stopReason: 'error', errorMessage: 'scripted failure' },
            { text: 'ok' },
          ],
        },
      },
    });
  });
  afterAll(async () => {
    await k?.stop();
  });

  it('runs only the failed tasks under <batchId>-retry-1, linked both ways; results --merge in input order', async () => {
    const b = `retry-${randomUUID()}`;
    const prompts = ['task 0', 'task 1 break', 'task 2', 'task 3 break', 'task 4'];
    const tasks = prompts.map((prompt) => ({ model: 'scripted/r', prompt, maxTurns: 3 }));
    const first = await startBatchWorkflow(k.client.client, k.taskQueue, tasks, { batchId: b, concurrency: 2 });
    const summary = (await first.result()) as AgentBatchResult;
    expect(summary).toMatchObject({ total: 5, done: 3, failed: 2, byStatus: { completed: 3, failed: 2 } });

    rules.splice(rules.indexOf(fail), 1); // the failing tasks pass the second time
    const retry = await keelAt(['batch', 'retry', b], k.address, k.taskQueue);
    const r1 = `${b}-retry-1`;
    expect(retry).toEqual({
      code: 0,
      stdout:
        `Retry ${r1} of ${b}: 2 task(s) that were failed, cancelled or never started (1, 3)\n` +
        `Temporal UI: ${UI}/namespaces/default/workflows/${r1}\n` +
        `Follow it with: npx keel --address ${k.address} --task-queue ${k.taskQueue} --ui ${UI} batch --attach ${r1}\n` +
        `Then merge: npx keel --address ${k.address} --task-queue ${k.taskQueue} --ui ${UI} batch results ${b} --merge --out results.jsonl\n`,
      stderr: '',
    });
    const second = k.client.client.workflow.getHandle(r1);
    expect(await second.result()).toMatchObject({ total: 2, done: 2, failed: 0 });
    // the same task definitions, only the failed ones, and the link in the memo
    expect((await batchInputOf(k.client.client, r1)).tasks).toEqual([tasks[1], tasks[3]]);
    expect((await second.describe()).memo).toEqual({ [RETRY_MEMO_KEY]: { retryOf: b, indices: [1, 3] } });

    const described = await keelAt(['batch', 'describe', b], k.address, k.taskQueue);
    expect(described.stdout.split('\n')).toEqual([
      `${b}  batch completed`,
      expect.stringMatching(/^3\/5 done · 2 failed · /),
      `First failure (${b}-1): scripted failure`,
      `retried in ${r1} (completed): tasks 1, 3`,
      `Temporal UI: ${UI}/namespaces/default/workflows/${b}`,
      '',
    ]);
    const describedRetry = await keelAt(['batch', 'describe', r1], k.address, k.taskQueue);
    expect(describedRetry.stdout).toContain(`\nretry of ${b}: its tasks 1, 3\n`);

    const out = join(mkdtempSync(join(tmpdir(), 'keel-retry-')), 'merged.jsonl');
    const merged = await keelAt(
      ['batch', 'results', b, '--merge', '--out', out, '--no-messages'],
      k.address,
      k.taskQueue,
    );
    expect(merged).toEqual({
      code: 0,
      stdout: '',
      stderr: `5/5 done · 0 failed (merged with retries) · Results: ${out}\n`,
    });
    const lines = readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { index: number; workflowId: string; status: string; finalText: string });
    expect(lines.map((l) => [l.index, l.workflowId, l.status, l.finalText])).toEqual([
      [0, `${b}-0`, 'completed', 'answer 0'],
      [1, `${r1}-0`, 'completed', 'answer 1'],
      [2, `${b}-2`, 'completed', 'answer 2'],
      [3, `${r1}-1`, 'completed', 'answer 3'],
      [4, `${b}-4`, 'completed', 'answer 4'],
    ]);

    // unmerged: the first batch's own lines, two failed
    const plain = await keelAt(['batch', 'results', b, '--no-messages'], k.address, k.taskQueue);
    expect(plain.code).toBe(1);
    expect(
      plain.stdout
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { status: string }).status),
    ).toEqual(['completed', 'failed', 'completed', 'failed', 'completed']);

    // nothing left to retry; a retry is not retried as the first batch
    expect(await keelAt(['batch', 'retry', b], k.address, k.taskQueue)).toEqual({
      code: 2,
      stdout: '',
      stderr: `keel: Nothing to retry: no task of ${b} is failed, cancelled or never started.\n`,
    });
    expect((await keelAt(['batch', 'retry', r1], k.address, k.taskQueue)).stderr).toBe(
      `keel: ${r1} is a retry of ${b}: give the first batch, ${b}.\n`,
    );
    // --status picks other outcomes: the completed tasks again, as retry 2
    const again = await keelAt(['batch', 'retry', b, '--status', 'completed'], k.address, k.taskQueue);
    expect(again.stdout.split('\n')[0]).toBe(
      `Retry ${b}-retry-2 of ${b}: 5 task(s) that were completed (0, 1, 2, 3, 4)`,
    );
    await k.client.client.workflow.getHandle(`${b}-retry-2`).result();
  }, 120_000);

  it('tasks given by page reference are read back from the page holders; -c overrides the concurrency', async () => {
    const b = `retry-pages-${randomUUID()}`;
    const tasks = ['task 0', 'task 1 fails', 'task 2', 'task 3', 'task 4 fails'].map((prompt) => ({
      model: 'scripted/p',
      prompt,
      maxTurns: 2,
    }));
    const first = await startBatchWorkflow(k.client.client, k.taskQueue, tasks, {
      batchId: b,
      concurrency: 3,
      pageSize: 2,
    });
    expect(await first.result()).toMatchObject({ total: 5, done: 3, failed: 2 });
    const retry = await keelAt(['batch', 'retry', b, '-c', '1'], k.address, k.taskQueue);
    expect(retry.stdout.split('\n')[0]).toBe(
      `Retry ${b}-retry-1 of ${b}: 2 task(s) that were failed, cancelled or never started (1, 4)`,
    );
    const { input, tasks: retried } = await batchInputOf(k.client.client, `${b}-retry-1`);
    expect(retried).toEqual([tasks[1], tasks[4]]);
    expect(input.concurrency).toBe(1);
    expect(await k.client.client.workflow.getHandle(`${b}-retry-1`).result()).toMatchObject({ total: 2, failed: 2 });
  }, 120_000);
});
