/**
 * Metrics: `keel worker --metrics-port` serves the Temporal runtime's Prometheus endpoint, and after a run it carries
 * Keel's series from the activity metricMeter (worker/activity-telemetry.ts): tokens by kind, cost, model latency,
 * tool calls and tool latency by tool; and from the workflow metricMeter (workflows/agent/approvals.ts) the approvals
 * requested and decided, whose difference is the number pending.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { freePort } from '../free-port.js';
import { until } from './harness.js';
import { killAllWorkers, spawnWorker } from './child-worker.js';

const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));

/** Samples of one metric family whose labels include all of `labels`: their values, summed. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  let total: number | undefined;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const has = Object.entries(labels).every(([k, v]) => (m[2] ?? '').includes(`${k}="${v}"`));
    if (has) total = (total ?? 0) + Number(m[3]);
  }
  return total;
}

describe('metrics', () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    child?.kill('SIGTERM');
    killAllWorkers();
  });

  it("keel worker --metrics-port exposes Keel's token, cost, latency and tool series after a run", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-metrics-'));
    const scripts = join(dir, 'scripts.json');
    writeFileSync(
      scripts,
      JSON.stringify({
        m: {
          replies: [
            {
              toolCall: { name: 'ls', arguments: { path: '.' }, id: 'l1' },
              usage: { input: 10, output: 4, totalTokens: 14 },
            },
            { text: 'listed', usage: { input: 20, output: 2, totalTokens: 22 } },
          ],
        },
      }),
    );
    const port = await freePort();
    const address = inject('temporalAddress');
    const taskQueue = `metrics-${randomUUID()}`;
    child = spawn(
      process.execPath,
      [
        BIN,
        '--address',
        address,
        '--task-queue',
        taskQueue,
        'worker',
        '--workspace',
        dir,
        '--scripts',
        scripts,
        '--metrics-port',
        String(port),
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
    await until(() => out.includes('[keel] worker on task queue'), 60_000, `worker up (output: ${out})`);

    const client = await AgentClient.connect({ address, taskQueue });
    try {
      const r = await (await client.start({ model: 'scripted/m', prompt: 'list', tools: ['ls'] })).result();
      expect(r.status).toBe('completed');
    } finally {
      await client.close();
    }

    let text = '';
    // the exporter publishes what the runtime has collected; the last activity's series may take a moment
    await until(
      async () => {
        text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
        return sample(text, 'keel_tool_latency_count', { tool: 'ls' }) === 1;
      },
      20_000,
      'Keel series on /metrics',
    );
    const model = { model: 'scripted/m' };
    expect(sample(text, 'keel_model_tokens', { ...model, kind: 'input' })).toBe(30);
    expect(sample(text, 'keel_model_tokens', { ...model, kind: 'output' })).toBe(6);
    expect(sample(text, 'keel_model_latency_count', model)).toBe(2);
    expect(sample(text, 'keel_model_cost_usd_count', model)).toBe(2);
    expect(sample(text, 'keel_model_cost_usd_sum', model)).toBe(0);
    expect(sample(text, 'keel_tool_calls', { tool: 'ls', is_error: 'false' })).toBe(1);
    expect(sample(text, 'keel_tool_latency_bucket', { tool: 'ls', le: '+Inf' })).toBe(1);
    // the SDK's own series are there too
    expect(text).toMatch(/^temporal_activity_execution_latency/m);
  });

  // no workflow cache: every workflow task replays the history first, and a replay emits no metric again
  it('counts approvals requested and decided once each (also when every task replays): pending is their difference', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'keel-metrics-approvals-'));
    const port = await freePort();
    const taskQueue = `metrics-approvals-${randomUUID()}`;
    await spawnWorker(fileURLToPath(new URL('./fixtures/metrics-worker.ts', import.meta.url)), {
      KEEL_TASK_QUEUE: taskQueue,
      KEEL_CWD: dir,
      KEEL_METRICS_PORT: String(port),
      KEEL_MAX_CACHED_WORKFLOWS: '0',
      KEEL_SCRIPTS: JSON.stringify({
        m: {
          replies: [{ toolCall: { name: 'bash', arguments: { command: 'echo ok' }, id: 'b1' } }, { text: 'done' }],
        },
      }),
    });
    const scrape = async () => (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    try {
      const h = await client.start({ model: 'scripted/m', prompt: 'run it', tools: ['bash'] });
      // waited for in the history (the approval's timer started: its workflow task completed), not by polling the
      // state() query: on a worker that caches nothing, queries coming in while that task runs once made the count
      // 2 where 1 was expected in CI (a workflow's metrics are emitted outside replay only)
      await until(
        async () =>
          ((await h.workflow.fetchHistory()).events ?? []).some((e) =>
            Buffer.from(e.userMetadata?.summary?.data ?? [])
              .toString()
              .includes('approval timeout'),
          ),
        60_000,
        'the approval timer',
      );
      const pending = (await h.state()).pendingApprovals[0];
      let text = '';
      await until(
        async () => sample((text = await scrape()), 'keel_approvals_requested', { tool: 'bash' }) === 1,
        20_000,
        'keel_approvals_requested on /metrics',
      );
      expect(sample(text, 'keel_approvals_decided')).toBeUndefined();
      await h.approve({ toolCallId: pending.toolCallId, argsDigest: pending.argsDigest, approver: 'alice' });
      expect((await h.result()).status).toBe('completed');
      await until(
        async () =>
          sample((text = await scrape()), 'keel_approvals_decided', { tool: 'bash', decision: 'approved' }) === 1,
        20_000,
        'keel_approvals_decided on /metrics',
      );
      expect(sample(text, 'keel_approvals_requested', { tool: 'bash' })).toBe(1);
      // labels the SDK adds to workflow metrics
      expect(
        sample(text, 'keel_approvals_requested', { workflowType: 'agentWorkflow', taskQueue, namespace: 'default' }),
      ).toBe(1);
    } finally {
      await client.close();
    }
  });
});
