/**
 * `keel cancel <batchId>` (issue 20 item 7): a batch has no `cancel` Update (it answered `No registered handler for
 * update: cancel` and went on); the CLI cancels it as `temporal workflow cancel` does — the batch closes Canceled, its
 * running tasks are cancelled, finished ones are kept, queued ones never start — and says so.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBatchWorkflow } from '../../client/batch-client.js';
import { formatCost, formatTokens } from '../../cli/render.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { progressQuery } from '../../workflows/batch/definitions.js';
import { gate, startKeel, workflowTaskFailures, type Keel } from './harness.js';
import { keelAt, TEST_UI as UI } from './cli-child.js';
import { holdTool } from './tool-fixtures.js';

const released = gate();
const hold = holdTool(released);
/** `wait`: like `hold`, on a gate of its own (the retry test opens it before the retry runs). */
const waitReleased = gate();
const wait = defineTool({
  name: 'wait',
  description: 'Waits until the test releases it, or the call is aborted.',
  parameters: { type: 'object', properties: {} },
  execute: async (_id, _args, signal) => {
    await Promise.race([waitReleased.promise, new Promise((r) => signal?.addEventListener('abort', r))]);
    return { content: [{ type: 'text', text: 'released' }] };
  },
});
const script = {
  rules: [
    { match: 'toolResult:hold', text: 'held' },
    { match: 'toolResult:wait', text: 'waited' },
    { match: 'quick', text: 'done at once' },
    { match: 'hold', toolCalls: [{ name: 'hold', arguments: {} }] },
    { match: 'slow', toolCalls: [{ name: 'wait', arguments: {} }] },
  ],
};

describe('keel cancel on a batch', () => {
  let k: Keel;
  beforeAll(async () => {
    k = await startKeel({ scripts: { b: script }, tools: [hold, wait] });
  });
  afterAll(async () => {
    released.open();
    waitReleased.open();
    await k?.stop();
  });

  it('cancels the batch and its running tasks, keeps the finished one, starts no queued one, and says so', async () => {
    const batchId = `cli-batch-cancel-${randomUUID()}`;
    const prompts = ['quick', 'hold 1', 'hold 2', 'hold 3'];
    const handle = await startBatchWorkflow(
      k.client.client,
      k.taskQueue,
      prompts.map((prompt) => ({ model: 'scripted/b', tools: ['hold'], prompt })),
      { batchId, concurrency: 2 },
    );
    await vi.waitFor(
      async () => {
        const p = await handle.query(progressQuery);
        if (p.done !== 1 || p.running !== 2 || p.queued !== 1) throw new Error(JSON.stringify(p));
      },
      { timeout: 30_000, interval: 100 },
    );

    const r = await keelAt(['cancel', batchId], k.address, k.taskQueue);
    expect(r).toEqual({
      code: 0,
      stdout:
        `cancel → batch ${batchId} (cancelled): 2 running task(s) cancelled, 1 finished kept, 1 not started\n` +
        `${UI}/namespaces/default/workflows/${batchId}\n`,
      stderr: '',
    });
    expect((await handle.describe()).status.name).toBe('CANCELLED');
    const child = (i: number) => k.client.client.workflow.getHandle(`${batchId}-${i}`);
    expect((await child(0).describe()).status.name).toBe('COMPLETED');
    for (const i of [1, 2])
      await vi.waitFor(async () => expect((await child(i).describe()).status.name).toBe('CANCELLED'), {
        timeout: 30_000,
        interval: 100,
      });
    await expect(child(3).describe()).rejects.toThrow(); // never started
    for (const h of [handle, child(0), child(1), child(2)]) expect(await workflowTaskFailures(h)).toEqual([]);

    // a closed batch: refused, with what it is
    const again = await keelAt(['cancel', batchId], k.address, k.taskQueue);
    expect(again).toEqual({
      code: 2,
      stdout: '',
      stderr: `keel: Batch ${batchId} is cancelled; it cannot be cancelled.\n`,
    });
  }, 120_000);

  it('a retry after a cancel re-runs every task without a result; results count the never started ones (issue 33 item 14)', async () => {
    const b = `cli-batch-cancel-retry-${randomUUID()}`;
    const dir = mkdtempSync(join(tmpdir(), 'keel-cancel-retry-'));
    const file = join(dir, 'tasks.jsonl');
    writeFileSync(
      file,
      ['quick 0', 'quick 1', 'slow 2', 'slow 3', 'slow 4', 'slow 5'].map((p) => JSON.stringify(p)).join('\n'),
    );
    const cli = (args: string[]) => keelAt(args, k.address, k.taskQueue);
    const started = await cli([
      'batch',
      file,
      '--concurrency',
      '2',
      '--id',
      b,
      '--detach',
      '--model',
      'scripted/b',
      '--tools',
      'wait',
    ]);
    expect(started).toEqual({ code: 0, stdout: `${b}\n${UI}/namespaces/default/workflows/${b}\n`, stderr: '' });
    const handle = k.client.client.workflow.getHandle(b);
    await vi.waitFor(
      async () => {
        const p = await handle.query(progressQuery);
        if (p.done !== 2 || p.running !== 2 || p.queued !== 2) throw new Error(JSON.stringify(p));
      },
      { timeout: 30_000, interval: 100 },
    );
    expect(await cli(['cancel', b])).toEqual({
      code: 0,
      stdout:
        `cancel → batch ${b} (cancelled): 2 running task(s) cancelled, 2 finished kept, 2 not started\n` +
        `${UI}/namespaces/default/workflows/${b}\n`,
      stderr: '',
    });

    // describe of the cancelled batch: its counts (from its progress query)
    const p = await handle.query(progressQuery);
    expect(await cli(['batch', 'describe', b])).toEqual({
      code: 1,
      stdout:
        `${b}  batch cancelled\n` +
        `2/6 done · 2 failed · 2 never started · ${formatTokens(p.tokens)} tokens · ${formatCost(p.cost)}\n` +
        `Temporal UI: ${UI}/namespaces/default/workflows/${b}\n`,
      stderr: '',
    });

    // before any retry: the never-started tasks are neither done nor failed, and the exit code says work is missing
    const out = join(dir, 'results.jsonl');
    const lines = () =>
      readFileSync(out, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { index: number; workflowId: string; status: string; error?: string });
    expect(await cli(['batch', 'results', b, '--merge', '--out', out, '--no-messages'])).toEqual({
      code: 1,
      stdout: '',
      stderr: `2/6 done · 2 failed · 2 never started (merged with retries) · Results: ${out}\n`,
    });
    expect(lines().map((l) => [l.index, l.workflowId, l.status, l.error])).toEqual([
      [0, `${b}-0`, 'completed', undefined],
      [1, `${b}-1`, 'completed', undefined],
      [2, `${b}-2`, 'cancelled', undefined],
      [3, `${b}-3`, 'cancelled', undefined],
      [4, `${b}-4`, 'queued', 'never started: the batch closed before this task began'],
      [5, `${b}-5`, 'queued', 'never started: the batch closed before this task began'],
    ]);

    // the retry takes the cancelled tasks and the never-started ones
    waitReleased.open();
    const r1 = `${b}-retry-1`;
    expect(await cli(['batch', 'retry', b])).toEqual({
      code: 0,
      stdout:
        `Retry ${r1} of ${b}: 4 task(s) that were failed, cancelled or never started (2, 3, 4, 5)\n` +
        `Temporal UI: ${UI}/namespaces/default/workflows/${r1}\n` +
        `Follow it with: npx keel --address ${k.address} --task-queue ${k.taskQueue} --ui ${UI} batch --attach ${r1}\n` +
        `Then merge: npx keel --address ${k.address} --task-queue ${k.taskQueue} --ui ${UI} batch results ${b} --merge --out results.jsonl\n`,
      stderr: '',
    });
    expect(await k.client.client.workflow.getHandle(r1).result()).toMatchObject({ total: 4, done: 4, failed: 0 });
    expect(await cli(['batch', 'results', b, '--merge', '--out', out, '--no-messages'])).toEqual({
      code: 0,
      stdout: '',
      stderr: `6/6 done · 0 failed (merged with retries) · Results: ${out}\n`,
    });
    expect(lines().map((l) => [l.index, l.workflowId, l.status])).toEqual([
      [0, `${b}-0`, 'completed'],
      [1, `${b}-1`, 'completed'],
      [2, `${r1}-0`, 'completed'],
      [3, `${r1}-1`, 'completed'],
      [4, `${r1}-2`, 'completed'],
      [5, `${r1}-3`, 'completed'],
    ]);
  }, 120_000);
});
