/**
 * `keel list` (issue 20 item 14), a child process against the test server: the runs and batches on the task queue,
 * newest first, without the batch's children (Temporal's ParentWorkflowId); `--batch <id>` lists those children;
 * `--status` filters by KeelStatus; the query it prints works as is in `temporal workflow list --query`.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { keelCli } from './cli-child.js';
import { startKeel, type Keel } from './harness.js';

/** The start times are the only thing that changes from run to run. */
const timeless = (s: string) => s.replace(/\d{4}-\d\d-\d\d \d\d:\d\d:\d\d/g, '<time>');

describe('keel list', () => {
  let keel: Keel;
  const tag = randomUUID().slice(0, 8);
  const ids = { first: `list-a-${tag}`, second: `list-b-${tag}`, batch: `list-batch-${tag}` };
  beforeAll(async () => {
    keel = await startKeel({ scripts: { hi: { rules: [{ text: 'hello' }] } } });
    await (await keel.start({ model: 'scripted/hi', prompt: 'one' }, ids.first)).result();
    await (await keel.start({ model: 'scripted/hi', prompt: 'two' }, ids.second)).result();
    const batch = await keel.client.startBatch(
      [
        { model: 'scripted/hi', prompt: 'x' },
        { model: 'scripted/hi', prompt: 'y' },
      ],
      { batchId: ids.batch },
    );
    await batch.result();
  });
  afterAll(() => keel?.stop());

  const list = (...args: string[]) =>
    keelCli(['--address', keel.address, '--task-queue', keel.taskQueue, 'list', ...args]);
  /** Visibility is eventually consistent: ask until it shows `rows` lines. */
  const listed = async (rows: number, ...args: string[]) => {
    let out = { code: null as number | null, stdout: '', stderr: '' };
    await vi.waitFor(
      async () => {
        out = await list(...args);
        expect(out.stdout.trim().split('\n').length).toBe(rows + 2); // header and the query line
      },
      { timeout: 30_000, interval: 500 },
    );
    return out;
  };

  it('top-level runs and batches, newest first, without the batch children', async () => {
    const out = await listed(3);
    const q = keel.taskQueue;
    const w = ids.batch.length;
    const row = (id: string, kind: string, model: string, turns: string, cost: string) =>
      `${id.padEnd(w)}  ${kind}  completed  ${model.padEnd(11)}  ${turns.padEnd(5)}  ${cost.padEnd(7)}  <time>`;
    expect([out.code, out.stderr, timeless(out.stdout)]).toEqual([
      0,
      '',
      [
        `${'WORKFLOW ID'.padEnd(w)}  KIND   STATUS     MODEL        TURNS  COST     STARTED (UTC)`,
        row(ids.batch, 'batch', '-', '-', '-'),
        row(ids.second, 'run  ', 'scripted/hi', '1', '$0.0000'),
        row(ids.first, 'run  ', 'scripted/hi', '1', '$0.0000'),
        `query: TaskQueue = "${q}" AND WorkflowType IN ("agentWorkflow", "agentBatchWorkflow") AND ParentWorkflowId IS NULL`,
        '',
      ].join('\n'),
    ]);
  });

  it('--batch lists its children; --status filters; the printed query works in the temporal CLI', async () => {
    const children = await listed(2, '--batch', ids.batch);
    // the two children start in the same instant: their order is not asserted
    const lines = timeless(children.stdout).split('\n');
    expect([lines[0], ...lines.slice(1, 3).sort()]).toEqual([
      `${'WORKFLOW ID'.padEnd(ids.batch.length + 2)}  KIND  STATUS     MODEL        TURNS  COST     STARTED (UTC)`,
      `${ids.batch}-0  run   completed  scripted/hi  1      $0.0000  <time>`,
      `${ids.batch}-1  run   completed  scripted/hi  1      $0.0000  <time>`,
    ]);
    expect(children.stdout).toContain(`query: TaskQueue = "${keel.taskQueue}" AND ParentWorkflowId = "${ids.batch}"\n`);

    const none = await list('--status', 'failed');
    expect(none).toEqual({
      code: 0,
      stderr: '',
      stdout:
        `No runs on task queue ${keel.taskQueue} with status failed.\n` +
        `query: TaskQueue = "${keel.taskQueue}" AND WorkflowType IN ("agentWorkflow", "agentBatchWorkflow") AND ParentWorkflowId IS NULL AND KeelStatus = "failed"\n`,
    });
    const bad = await list('--status', 'done');
    expect([bad.code, bad.stderr]).toEqual([
      2,
      "error: option '--status <status>' argument 'done' is invalid. Allowed choices are running, awaiting-approval, waiting, completed, stopped, cancelled, failed.\n(run with --help for usage)\n",
    ]);

    const query = children.stdout
      .split('\n')
      .find((l) => l.startsWith('query: '))!
      .slice('query: '.length);
    const cli = await ensureTemporalCli();
    const temporal = await new Promise<string>((resolve, reject) =>
      execFile(
        cli,
        ['workflow', 'list', '--query', query, '--address', keel.address, '-o', 'json'],
        { timeout: 60_000 },
        (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout)),
      ),
    );
    const found = (JSON.parse(temporal) as { execution: { workflowId: string } }[]).map((r) => r.execution.workflowId);
    expect(found.sort()).toEqual([`${ids.batch}-0`, `${ids.batch}-1`]);
  });
});
