/**
 * `keel worker --approve bash` (issue 20 item 12): the CLI puts a built-in tool behind approval. A `bash` call of a
 * run on that worker waits (`KeelStatus="awaiting-approval"`, listed by `keel pending`) and runs only once approved
 * with `keel approve`; an unknown name is refused before the worker starts. All through child processes.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { keelCli, spawnUntil, stopChild } from './cli-child.js';
import { until, workflowTaskFailures } from './harness.js';

describe('keel worker --approve', () => {
  it('--approve bash: a bash call waits for approval (KeelStatus, keel pending) and runs once approved', async () => {
    const address = inject('temporalAddress');
    const taskQueue = `cli-approve-${randomUUID()}`;
    const workspace = mkdtempSync(join(tmpdir(), 'keel-cli-approve-'));
    const rules = join(workspace, 'rules.json');
    writeFileSync(
      rules,
      JSON.stringify({
        rules: [
          { match: 'toolResult:bash', text: 'made it' },
          { match: 'make', toolCalls: [{ id: 'b1', name: 'bash', arguments: { command: 'echo hi > made.txt' } }] },
        ],
      }),
    );
    const conn = ['--address', address, '--task-queue', taskQueue];
    const worker = await spawnUntil(
      [...conn, 'worker', '--workspace', workspace, '--approve', 'bash'],
      `[keel] worker on task queue ${taskQueue}`,
    );
    const client = await AgentClient.connect({ address, taskQueue });
    try {
      const h = await client.start({ model: `scripted/${rules}`, prompt: 'make a file', tools: ['bash'] });
      await until(
        async () => {
          const ids: string[] = [];
          for await (const w of client.client.workflow.list({
            query: `KeelStatus="awaiting-approval" AND WorkflowId="${h.workflowId}"`,
          }))
            ids.push(w.workflowId);
          return ids.length === 1;
        },
        30_000,
        'KeelStatus awaiting-approval',
      );
      expect(existsSync(join(workspace, 'made.txt'))).toBe(false);
      const pending = await keelCli([...conn, 'pending', '--json']);
      expect(pending.code, pending.stderr).toBe(0);
      const ours = (
        JSON.parse(pending.stdout) as { workflowId: string; pendingApprovals: { toolCallId: string }[] }[]
      ).find((r) => r.workflowId === h.workflowId);
      expect(ours?.pendingApprovals).toEqual([
        {
          toolCallId: 'b1',
          toolName: 'bash',
          args: { command: 'echo hi > made.txt' },
          argsDigest: expect.stringMatching(/^[0-9a-f]{64}$/),
          requestedAt: expect.any(Number),
        },
      ]);
      const approved = await keelCli([...conn, 'approve', h.workflowId, 'b1', '--as', 'alice']);
      expect([approved.code, approved.stderr]).toEqual([0, '']);
      const r = await h.result();
      expect([r.status, r.finalText]).toEqual(['completed', 'made it']);
      expect(readFileSync(join(workspace, 'made.txt'), 'utf8')).toBe('hi\n');
      expect(await workflowTaskFailures(h)).toEqual([]);
    } finally {
      await client.close();
      expect(await stopChild(worker.child)).toBe(0);
    }
  }, 120_000);

  it('an --approve name the worker does not have is refused before it starts (exit 2)', async () => {
    const out = await keelCli([
      '--address',
      inject('temporalAddress'),
      'worker',
      '--no-builtin',
      '--approve',
      'bash,deploy',
    ]);
    expect(out).toEqual({
      code: 2,
      stdout: '',
      stderr: 'keel: --approve bash,deploy: no such tool on this worker (its tools: none)\n',
    });
  });
});
