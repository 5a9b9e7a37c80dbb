/**
 * `keel cancel <batchId>` (issue 20 item 7): a batch has no `cancel` Update (it answered `No registered handler for
 * update: cancel` and went on); the CLI cancels it as `temporal workflow cancel` does — the batch closes Canceled, its
 * running tasks are cancelled, finished ones are kept, queued ones never start — and says so.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { startBatchWorkflow } from '../../client/batch-client.js';
import { progressQuery } from '../../workflows/batch/definitions.js';
import { gate, startKeel, workflowTaskFailures, type Keel } from './harness.js';
import { keelAt, TEST_UI as UI } from './cli-child.js';
import { holdTool } from './tool-fixtures.js';

const released = gate();
const hold = holdTool(released);
const script = {
  rules: [
    { match: 'toolResult:hold', text: 'held' },
    { match: 'quick', text: 'done at once' },
    { match: 'hold', toolCalls: [{ name: 'hold', arguments: {} }] },
  ],
};

describe('keel cancel on a batch', () => {
  let k: Keel;
  beforeAll(async () => {
    k = await startKeel({ scripts: { b: script }, tools: [hold] });
  });
  afterAll(async () => {
    released.open();
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
});
