/**
 * `keel schedule` and `AgentClient.schedule` (issue 27 item 1): a Temporal Schedule starts batches whose ids follow
 * the scheduled time; while one runs (a gated batch) the due ones are skipped (overlap SKIP, the default); pause,
 * unpause, trigger, backfill, delete; describe lists the last batches with their outcome counts. CLI output exact.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { AgentBatchResult } from '../../common/batch-definitions.js';
import { formatCost, formatDuration, formatTokens } from '../../cli/render.js';
import { SCHEDULE_MEMO_KEY } from '../../client/schedule-client.js';
import { gate, startKeel, type Keel } from './harness.js';
import { keelAt, TEST_UI as UI } from './cli-child.js';
import { holdTool } from './tool-fixtures.js';

const released = gate();
const hold = holdTool(released);
const script = {
  rules: [
    { match: 'toolResult:hold', text: 'held' },
    { match: 'hold', toolCalls: [{ name: 'hold', arguments: {} }] },
    { text: 'ok' },
  ],
};

/** The id Temporal gives a scheduled workflow: the action's id, `-`, the scheduled time in RFC 3339 to the second. */
const idAt = (prefix: string, t: Date) => `${prefix}-${t.toISOString().replace(/\.\d{3}Z$/, 'Z')}`;

describe('keel schedule', () => {
  let k: Keel;
  let dir: string;
  let prefix: string;
  beforeAll(async () => {
    k = await startKeel({ scripts: { s: script }, tools: [hold] });
    dir = mkdtempSync(join(tmpdir(), 'keel-schedule-'));
    prefix = `npx keel --address ${k.address} --task-queue ${k.taskQueue} --ui ${UI}`;
  });
  afterAll(async () => {
    released.open();
    await k?.stop();
  });

  it('every 1s: ids follow the scheduled time, SKIP while a batch runs, pause, describe, unpause, delete', async () => {
    const name = `s1-${randomUUID().slice(0, 8)}`;
    const file = join(dir, 'hold.jsonl');
    writeFileSync(file, '"hold"\n');
    const created = await keelAt(
      [
        'schedule',
        'create',
        name,
        file,
        '--every',
        '1s',
        '--catchup-window',
        '1m',
        '--model',
        'scripted/s',
        '--tools',
        'hold',
      ],
      k.address,
      k.taskQueue,
    );
    expect(created).toEqual({
      code: 0,
      stdout:
        `Schedule ${name} created: every 1s · batch of 1 task(s) from ${file} · overlap skip\n` +
        `Batch ids: keel-batch-${name}-<scheduled time, UTC, e.g. 2026-12-03T02:00:00Z>\n` +
        `Temporal UI: ${UI}/namespaces/default/schedules/${name}\n` +
        `Describe it with: ${prefix} schedule describe ${name}\n`,
      stderr: '',
    });
    const handle = k.client.getSchedule(name);
    // the first batch holds; the starts due meanwhile are skipped, not queued
    const d = await vi.waitFor(
      async () => {
        const d = await handle.describe();
        if (d.info.numActionsSkippedOverlap < 2) throw new Error(JSON.stringify(d.info));
        return d;
      },
      { timeout: 30_000, interval: 200 },
    );
    expect(d.info.recentActions).toHaveLength(1);
    expect(d.info.runningActions).toHaveLength(1);
    const first = d.info.recentActions[0];
    const firstId = idAt(`keel-batch-${name}`, first.scheduledAt);
    expect(first.action.workflow.workflowId).toBe(firstId);
    expect((await k.client.client.workflow.getHandle(firstId).describe()).memo).toEqual({ [SCHEDULE_MEMO_KEY]: name });

    expect(await keelAt(['schedule', 'pause', name, '--note', 'maintenance'], k.address, k.taskQueue)).toEqual({
      code: 0,
      stdout: `Schedule ${name} paused.\n`,
      stderr: '',
    });
    released.open();
    const result = (await k.client.client.workflow.getHandle(firstId).result()) as AgentBatchResult;
    expect(result).toMatchObject({ total: 1, done: 1, failed: 0 });
    const paused = await handle.describe();
    expect(paused.info.numActionsTaken).toBe(1);
    const described = await keelAt(['schedule', 'describe', name], k.address, k.taskQueue);
    expect(described).toEqual({
      code: 0,
      stdout:
        [
          `Schedule ${name} · paused (maintenance)`,
          `Runs: batch of 1 task(s) from ${file}`,
          `Spec: every 1s · overlap skip · catch-up window ${formatDuration(60_000)}`,
          `Ids: keel-batch-${name}-<scheduled time, UTC>`,
          'Next: (paused)',
          `Started 1 · skipped while one ran ${paused.info.numActionsSkippedOverlap} · missed the catch-up window 0`,
          'Last 1:',
          `  ${firstId}  completed  1/1 done · 0 failed · ${formatTokens(result.tokens)} tokens · ${formatCost(result.cost)}`,
          `Temporal UI: ${UI}/namespaces/default/schedules/${name}`,
        ].join('\n') + '\n',
      stderr: '',
    });

    expect((await keelAt(['schedule', 'unpause', name], k.address, k.taskQueue)).stdout).toBe(
      `Schedule ${name} unpaused.\n`,
    );
    const later = await vi.waitFor(
      async () => {
        const d = await handle.describe();
        if (d.info.recentActions.length < 2) throw new Error(JSON.stringify(d.info));
        return d.info.recentActions[1];
      },
      { timeout: 30_000, interval: 200 },
    );
    expect(later.scheduledAt.getTime()).toBeGreaterThan(first.scheduledAt.getTime());
    expect(later.action.workflow.workflowId).toBe(idAt(`keel-batch-${name}`, later.scheduledAt));

    expect(await keelAt(['schedule', 'delete', name], k.address, k.taskQueue)).toEqual({
      code: 0,
      stdout: `Schedule ${name} deleted; the batches it started are kept.\n`,
      stderr: '',
    });
    expect(await keelAt(['schedule', 'describe', name], k.address, k.taskQueue)).toEqual({
      code: 2,
      stdout: '',
      stderr: `keel: No schedule ${name} in namespace default. List them with: ${prefix} schedule list\n`,
    });
  }, 120_000);

  it('cron, created paused: trigger starts one now, backfill the nights of a range, list shows it', async () => {
    const name = `s2-${randomUUID().slice(0, 8)}`;
    const file = join(dir, 'quick.jsonl');
    writeFileSync(file, '"quick a"\n"quick b"\n');
    const created = await keelAt(
      ['schedule', 'create', name, file, '--cron', '0 2 * * *', '--paused', '--model', 'scripted/s'],
      k.address,
      k.taskQueue,
    );
    expect(created.stdout.split('\n')[0]).toBe(
      `Schedule ${name} created (paused): cron 0 2 * * * · batch of 2 task(s) from ${file} · overlap skip`,
    );
    const handle = k.client.getSchedule(name);
    expect(await keelAt(['schedule', 'trigger', name], k.address, k.taskQueue)).toEqual({
      code: 0,
      stdout: `Schedule ${name} triggered (overlap skip).\n`,
      stderr: '',
    });
    const triggered = await vi.waitFor(
      async () => {
        const d = await handle.describe();
        if (d.info.recentActions.length < 1) throw new Error('no action yet');
        return d.info.recentActions[0].action.workflow.workflowId;
      },
      { timeout: 30_000, interval: 200 },
    );
    expect(triggered).toMatch(new RegExp(`^keel-batch-${name}-\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\dZ$`));
    expect(await k.client.client.workflow.getHandle(triggered).result()).toMatchObject({ total: 2, done: 2 });

    const backfill = await keelAt(
      [
        'schedule',
        'backfill',
        name,
        '--from',
        '2026-01-01T00:00:00Z',
        '--to',
        '2026-01-03T00:00:00Z',
        '--overlap',
        'allow-all',
      ],
      k.address,
      k.taskQueue,
    );
    expect(backfill).toEqual({
      code: 0,
      stdout: `Schedule ${name}: backfilling 2026-01-01T00:00:00.000Z to 2026-01-03T00:00:00.000Z (overlap allow-all).\n`,
      stderr: '',
    });
    for (const night of ['2026-01-01T02:00:00Z', '2026-01-02T02:00:00Z']) {
      const id = `keel-batch-${name}-${night}`;
      const result = await vi.waitFor(() => k.client.client.workflow.getHandle(id).result(), {
        timeout: 30_000,
        interval: 200,
      });
      expect(result).toMatchObject({ total: 2, done: 2, failed: 0 });
    }
    const described = await keelAt(['schedule', 'describe', name, '--last', '3'], k.address, k.taskQueue);
    expect(described.stdout).toContain(
      `\nStarted 3 · skipped while one ran 0 · missed the catch-up window 0\nLast 3:\n`,
    );
    expect(described.stdout).toContain(
      `\n  keel-batch-${name}-2026-01-02T02:00:00Z  completed  2/2 done · 0 failed · `,
    );

    await vi.waitFor(
      async () => {
        const list = await keelAt(['schedule', 'list'], k.address, k.taskQueue);
        expect(list.stdout.split('\n')).toContain(`${name}  paused  cron 0 2 * * *  batch of 2 task(s) from ${file}`);
      },
      { timeout: 30_000, interval: 500 },
    );
    await handle.delete();
  }, 120_000);

  it('a nightly graded batch: --repeat 2 over tasks with expected answers; describe shows pass rate and pass@k', async () => {
    const name = `s7-${randomUUID().slice(0, 8)}`;
    const file = join(dir, 'graded.jsonl');
    // the scripted model answers "ok": the first task passes, the second fails, each run twice
    writeFileSync(file, '{"prompt": "a", "expected": "ok"}\n{"prompt": "b", "expected": "nope"}\n');
    const created = await keelAt(
      ['schedule', 'create', name, file, '--cron', '0 2 * * *', '--paused', '--repeat', '2', '-m', 'scripted/s'],
      k.address,
      k.taskQueue,
    );
    expect(created.stderr).toBe('');
    expect(created.code).toBe(0);
    expect((await keelAt(['schedule', 'trigger', name], k.address, k.taskQueue)).code).toBe(0);
    const id = await vi.waitFor(
      async () => {
        const d = await k.client.getSchedule(name).describe();
        if (d.info.recentActions.length < 1) throw new Error('no batch yet');
        return d.info.recentActions[0].action.workflow.workflowId;
      },
      { timeout: 30_000, interval: 200 },
    );
    const result = (await k.client.client.workflow.getHandle(id).result()) as AgentBatchResult;
    expect({ total: result.total, graded: result.grading?.graded, passed: result.grading?.passed }).toEqual({
      total: 4,
      graded: 4,
      passed: 2,
    });
    const described = await keelAt(['schedule', 'describe', name], k.address, k.taskQueue);
    const line = described.stdout.split('\n').find((l) => l.includes(id));
    expect(line).toMatch(/ 4\/4 done · 0 failed · .* · passed 2\/4 · pass@2 1\/2$/);
    expect((await keelAt(['schedule', 'delete', name], k.address, k.taskQueue)).code).toBe(0);
  }, 120_000);

  it('a task list over 1 MB: held once in the payload store, every batch reads it by reference', async () => {
    const scheduleId = `s6-${randomUUID().slice(0, 8)}`;
    // three tasks of 400 KB each: 1.2 MB of JSON, more than a schedule may carry inline
    const tasks = [0, 1, 2].map((i) => ({ model: 'scripted/s', prompt: `task ${i} ${'x'.repeat(400_000)}` }));
    const handle = await k.client.schedule({ scheduleId, every: '1h', tasks, paused: true });
    // the schedule holds a reference, not the tasks: its action's input is a small stored-payload claim
    const raw = await k.client.client.workflowService.describeSchedule({ namespace: 'default', scheduleId });
    const input = raw.schedule?.action?.startWorkflow?.input?.payloads?.[0];
    expect(input?.externalPayloads?.length).toBe(1);
    expect(input?.data?.length ?? 0).toBeLessThan(10_000);
    // two batches one after the other (overlap skip): the second reads the list after the first has finished
    for (const n of [1, 2]) {
      await handle.trigger();
      const id = await vi.waitFor(
        async () => {
          const d = await handle.describe();
          if (d.info.recentActions.length < n) throw new Error(`batch ${n} not started yet`);
          return d.info.recentActions[n - 1].action.workflow.workflowId;
        },
        { timeout: 30_000, interval: 200 },
      );
      const result = (await k.client.client.workflow.getHandle(id).result()) as AgentBatchResult;
      expect({ total: result.total, done: result.done, byStatus: result.byStatus }).toEqual({
        total: 3,
        done: 3,
        byStatus: { completed: 3 },
      });
    }
    await handle.delete();
    // without a payload store the same list is refused, saying what to do
    const { AgentClient } = await import('../../client/agent-client.js');
    const bare = await AgentClient.connect({ address: k.address, taskQueue: k.taskQueue, payloadStorage: false });
    try {
      await expect(bare.schedule({ scheduleId: `${scheduleId}-bare`, every: '1h', tasks })).rejects.toThrow(
        '3 tasks are 1.1 MB of JSON and this client has no payload store, so the schedule would carry them inline (at ' +
          'most 1 MB): connect with a payload store (AgentClient.connect({ payloadStorage }) — the default unless ' +
          'payloadStorage is false — shared with the workers), or split them into several schedules.',
      );
    } finally {
      await bare.close();
    }
  }, 120_000);

  it('AgentClient.schedule: one run per start, id keel-run-<scheduleId>-<time>', async () => {
    const scheduleId = `s3-${randomUUID().slice(0, 8)}`;
    const handle = await k.client.schedule({
      scheduleId,
      every: '1h',
      run: { model: 'scripted/s', prompt: 'quick' },
      paused: true,
    });
    await handle.trigger();
    const action = await vi.waitFor(
      async () => {
        const d = await handle.describe();
        if (d.info.recentActions.length < 1) throw new Error('no action yet');
        return d.info.recentActions[0];
      },
      { timeout: 30_000, interval: 200 },
    );
    const id = action.action.workflow.workflowId;
    expect(id.startsWith(`keel-run-${scheduleId}-`)).toBe(true);
    expect((await k.client.getHandle(id).result()).finalText).toBe('ok');
    await handle.delete();

    // the same from the command line: --prompt schedules one run, with its budget
    const name = `s4-${randomUUID().slice(0, 8)}`;
    expect(
      await keelAt(
        [
          'schedule',
          'create',
          name,
          '--prompt',
          'quick',
          '--every',
          '1h',
          '--paused',
          '-m',
          'scripted/s',
          '--max-model-calls',
          '3',
        ],
        k.address,
        k.taskQueue,
      ),
    ).toEqual({
      code: 0,
      stdout:
        `Schedule ${name} created (paused): every 1h · one run · overlap skip\n` +
        `Run ids: keel-run-${name}-<scheduled time, UTC, e.g. 2026-12-03T02:00:00Z>\n` +
        `Temporal UI: ${UI}/namespaces/default/schedules/${name}\n` +
        `Describe it with: ${prefix} schedule describe ${name}\n`,
      stderr: '',
    });
    expect((await keelAt(['schedule', 'trigger', name], k.address, k.taskQueue)).code).toBe(0);
    const runId = await vi.waitFor(
      async () => {
        const d = await k.client.getSchedule(name).describe();
        if (d.info.recentActions.length < 1) throw new Error('no action yet');
        return d.info.recentActions[0].action.workflow.workflowId;
      },
      { timeout: 30_000, interval: 200 },
    );
    const run = k.client.getHandle(runId);
    expect((await run.result()).finalText).toBe('ok');
    expect((await run.state()).budget).toEqual([{ kind: 'model calls', used: 1, limit: 3 }]);
    expect(
      await keelAt(
        ['schedule', 'create', `${name}-x`, '--prompt', 'quick', '--every', '1h', '-c', '2'],
        k.address,
        k.taskQueue,
      ),
    ).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'keel: --concurrency, --can-after-*, --repeat and --variant are options of a batch; a --prompt schedule starts one run.\n',
    });
    await k.client.getSchedule(name).delete();
    await expect(k.client.schedule({ scheduleId: 'x', every: 'soon', tasks: [] })).rejects.toThrow(
      'every: "soon" is not a duration (e.g. 30s, 6h, 1d).',
    );
  }, 60_000);
});
