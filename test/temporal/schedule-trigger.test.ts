/**
 * `keel schedule trigger` under the schedule's own overlap policy (issue 33 item 19): Temporal's
 * `ScheduleHandle.trigger()` without a policy sends ALLOW_ALL, so on 0.6.2 two triggers beside a running batch started
 * two more batches whatever the schedule said. Here, for each policy, a schedule whose batch holds on a gate is
 * triggered three times: `skip` starts one batch and skips two (and `--overlap allow-all` still starts one beside it),
 * `buffer-one` runs one, buffers one and drops one (the buffered one starts when the first ends), `allow-all` runs
 * three at once. Each trigger is sent in a later second than the one before: the ids of scheduled workflows end in
 * the second they were started for, so two starts in one second would share an id.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ScheduleDescription } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { AgentBatchResult } from '../../common/batch-definitions.js';
import { gate, startKeel, type Keel } from './harness.js';
import { keelAt } from './cli-child.js';

const POLICIES = ['skip', 'buffer-one', 'allow-all'] as const;
type Policy = (typeof POLICIES)[number];
const gates = Object.fromEntries(POLICIES.map((p) => [p, gate()])) as Record<Policy, ReturnType<typeof gate>>;

/** `hold`: waits for the gate of the policy its call names. */
const hold = defineTool({
  name: 'hold',
  description: 'Waits until the test opens the gate named by `gate`.',
  parameters: { type: 'object', properties: { gate: { type: 'string' } }, required: ['gate'] },
  execute: async (_id, args: { gate: Policy }, signal) => {
    await Promise.race([gates[args.gate].promise, new Promise((r) => signal?.addEventListener('abort', r))]);
    return { content: [{ type: 'text', text: 'released' }] };
  },
});
const script = {
  rules: [
    { match: 'toolResult:hold', text: 'held' },
    ...POLICIES.map((p) => ({ match: `hold ${p}`, toolCalls: [{ name: 'hold', arguments: { gate: p } }] })),
  ],
};

/** Resolves once the clock has passed the second it is in now. */
async function nextSecond(): Promise<void> {
  const now = Math.floor(Date.now() / 1000);
  await vi.waitFor(
    () => {
      if (Math.floor(Date.now() / 1000) === now) throw new Error('still the same second');
    },
    { timeout: 5000, interval: 50 },
  );
}

describe('keel schedule trigger: the schedule’s overlap policy unless --overlap is given', () => {
  let k: Keel;
  let dir: string;
  beforeAll(async () => {
    k = await startKeel({ scripts: { t: script }, tools: [hold] });
    dir = mkdtempSync(join(tmpdir(), 'keel-schedule-trigger-'));
  });
  afterAll(async () => {
    for (const g of Object.values(gates)) g.open();
    await k?.stop();
  });

  /** A paused schedule (its cron never due in the test) of one batch whose task holds on `policy`'s gate. */
  async function scheduleFor(policy: Policy, withFlag: boolean) {
    const name = `trig-${policy}-${randomUUID().slice(0, 8)}`;
    const file = join(dir, `${policy}.jsonl`);
    writeFileSync(file, `"hold ${policy}"\n`);
    const args = ['schedule', 'create', name, file, '--cron', '0 2 1 1 *', '--paused', '--model', 'scripted/t'];
    const created = await keelAt(
      [...args, '--tools', 'hold', ...(withFlag ? ['--overlap', policy] : [])],
      k.address,
      k.taskQueue,
    );
    expect(created.code, created.stderr).toBe(0);
    const handle = k.client.getSchedule(name);
    const trigger = async (...extra: string[]) => {
      await nextSecond();
      return keelAt(['schedule', 'trigger', name, ...extra], k.address, k.taskQueue);
    };
    /** Waits until `describe()` satisfies `ok`, and returns that description. */
    const until = (ok: (d: ScheduleDescription) => boolean) =>
      vi.waitFor(
        async () => {
          const d = await handle.describe();
          if (!ok(d)) throw new Error(JSON.stringify({ info: d.info, buffer: String(d.raw.info?.bufferSize) }));
          return d;
        },
        { timeout: 30_000, interval: 200 },
      );
    // the first batch, holding
    expect(await trigger()).toEqual({
      code: 0,
      stdout: `Schedule ${name} triggered (overlap ${policy}).\n`,
      stderr: '',
    });
    const first = (await until((d) => d.info.numActionsTaken === 1)).info.recentActions[0].action.workflow.workflowId;
    await vi.waitFor(async () => expect(await isRunning(first)).toBe(true), { timeout: 30_000, interval: 200 });
    return { name, handle, trigger, until, first };
  }

  /** Whether this workflow is running now (a schedule tracks its running workflows only under policies that need it). */
  const isRunning = async (workflowId: string) =>
    (await k.client.client.workflow.getHandle(workflowId).describe()).status.name === 'RUNNING';

  /** The workflows the schedule started, each with whether it runs now. */
  async function started(d: ScheduleDescription): Promise<[string, boolean][]> {
    const ids = d.info.recentActions.map((a) => a.action.workflow.workflowId);
    return Promise.all(ids.map(async (id): Promise<[string, boolean]> => [id, await isRunning(id)]));
  }

  it('skip (the default): two triggers beside a running batch start nothing; --overlap allow-all starts one', async () => {
    const s = await scheduleFor('skip', false);
    const skipped = `${s.first} is running, so this start is skipped. Give --overlap allow-all to start one beside it, or buffer-one to start one when it ends.\n`;
    for (const n of [1, 2]) {
      expect(await s.trigger()).toEqual({
        code: 0,
        stdout: `Schedule ${s.name} triggered (overlap skip).\n${skipped}`,
        stderr: '',
      });
      await s.until((d) => d.info.numActionsSkippedOverlap === n);
    }
    let d = await s.handle.describe();
    expect([d.info.numActionsTaken, d.info.runningActions.length]).toEqual([1, 1]);

    expect((await s.trigger('--overlap', 'allow-all')).stdout).toBe(
      `Schedule ${s.name} triggered (overlap allow-all).\n`,
    );
    d = await s.until((d) => d.info.numActionsTaken === 2);
    expect(d.info.numActionsSkippedOverlap).toBe(2);
    const both = await started(d);
    expect(both.map(([, running]) => running)).toEqual([true, true]);
    gates.skip.open();
    for (const [id] of both) expect(await k.client.client.workflow.getHandle(id).result()).toMatchObject({ done: 1 });
  }, 120_000);

  it('buffer-one: of two triggers beside a running batch one waits for it and one is dropped', async () => {
    const s = await scheduleFor('buffer-one', true);
    const waits = `${s.first} is running: this start waits until it ends (one start waits at most; more are skipped).\n`;
    expect(await s.trigger()).toEqual({
      code: 0,
      stdout: `Schedule ${s.name} triggered (overlap buffer-one).\n${waits}`,
      stderr: '',
    });
    await s.until((d) => Number(d.raw.info?.bufferSize) === 1);
    expect((await s.trigger()).stdout).toBe(`Schedule ${s.name} triggered (overlap buffer-one).\n${waits}`);
    // the buffer holds one start: the third is skipped
    let d = await s.until((d) => d.info.numActionsSkippedOverlap === 1);
    expect([d.info.numActionsTaken, d.info.runningActions.length, Number(d.raw.info?.bufferSize)]).toEqual([1, 1, 1]);

    gates['buffer-one'].open();
    d = await s.until((d) => d.info.numActionsTaken === 2);
    const second = d.info.recentActions[1].action.workflow.workflowId;
    expect(second).not.toBe(s.first);
    const result = (await k.client.client.workflow.getHandle(second).result()) as AgentBatchResult;
    expect(result).toMatchObject({ total: 1, done: 1 });
    d = await s.handle.describe();
    expect([d.info.numActionsTaken, Number(d.raw.info?.bufferSize)]).toEqual([2, 0]);
  }, 120_000);

  it('allow-all: two triggers beside a running batch start two more at once', async () => {
    const s = await scheduleFor('allow-all', true);
    for (const n of [2, 3]) {
      expect(await s.trigger()).toEqual({
        code: 0,
        stdout: `Schedule ${s.name} triggered (overlap allow-all).\n`,
        stderr: '',
      });
      await s.until((d) => d.info.numActionsTaken === n);
    }
    const d = await s.handle.describe();
    expect(d.info.numActionsSkippedOverlap).toBe(0);
    const all = await started(d);
    expect(all.map(([, running]) => running)).toEqual([true, true, true]);
    gates['allow-all'].open();
    for (const [id] of all) expect(await k.client.client.workflow.getHandle(id).result()).toMatchObject({ done: 1 });
  }, 120_000);
});
