/**
 * `keel worker --approve bash` (issue 20 item 12): the CLI puts a built-in tool behind approval. A `bash` call of a
 * run on that worker waits (`KeelStatus="awaiting-approval"`, listed by `keel pending`) and runs only once approved
 * with `keel approve`; an unknown name is refused before the worker starts. Since 0.5.0 the worker verifies approvals
 * (`--approvals-hmac-secret-file`, README "Who may approve"): `keel approve` signs with `--token-file` or `--token`
 * ($KEEL_APPROVAL_TOKEN); an unsigned decision or a token for another call is refused; a worker with `--approve` and
 * no approvals flag does not start. All through child processes.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { mintApprovalToken } from '../../client/approval-token.js';
import { keelCli, spawnUntil, stopChild } from './cli-child.js';
import { until, workflowTaskFailures } from './harness.js';

const SECRET = 'the-cli-test-secret-of-32-bytes-at-least';

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
    const secretFile = join(workspace, '..', `${taskQueue}.secret`);
    writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
    const worker = await spawnUntil(
      [...conn, 'worker', '--workspace', workspace, '--approve', 'bash', '--approvals-hmac-secret-file', secretFile],
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
      ).find((r) => r.workflowId === h.workflowId) as
        | { workflowId: string; pendingApprovals: { toolCallId: string; argsDigest: string; requestId: string }[] }
        | undefined;
      expect(ours?.pendingApprovals).toEqual([
        {
          toolCallId: 'b1',
          toolName: 'bash',
          args: { command: 'echo hi > made.txt' },
          argsDigest: expect.stringMatching(/^[0-9a-f]{64}$/),
          requestedAt: expect.any(Number),
          requestId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        },
      ]);
      const digest = ours!.pendingApprovals[0].argsDigest;
      const unsigned = await keelCli([...conn, 'approve', h.workflowId, 'b1', '--digest', digest, '--as', 'alice']);
      expect([unsigned.code, unsigned.stderr]).toEqual([
        2,
        'keel: approve: this run accepts only signed decisions: pass token, a JWT bound to this run, tool call and argsDigest (README "Who may approve")\n',
      ]);
      const mint = (subject: string) =>
        mintApprovalToken({
          secret: SECRET,
          subject,
          workflowId: h.workflowId,
          toolCallId: 'b1',
          argsDigest: ours!.pendingApprovals[0].argsDigest,
          requestId: ours!.pendingApprovals[0].requestId,
          decision: 'approve',
        });
      // --token reads $KEEL_APPROVAL_TOKEN; a token for another call is refused
      const other = await keelCli([...conn, 'approve', h.workflowId, 'b1', '--token'], {
        env: {
          ...process.env,
          KEEL_APPROVAL_TOKEN: await mintApprovalToken({
            secret: SECRET,
            subject: 'bob',
            workflowId: h.workflowId,
            toolCallId: 'b2',
            argsDigest: ours!.pendingApprovals[0].argsDigest,
            requestId: ours!.pendingApprovals[0].requestId,
            decision: 'approve',
          }),
        },
      });
      expect([other.code, other.stderr]).toEqual([
        2,
        'keel: Cannot approve tool call b1: the token\'s keel_tool_call is "b2", not "b1"\n',
      ]);
      const tokenFile = join(workspace, '..', `${taskQueue}.token`);
      writeFileSync(tokenFile, `${await mint('alice')}\n`, { mode: 0o600 });
      const approved = await keelCli([...conn, 'approve', h.workflowId, 'b1', '--token-file', tokenFile]);
      expect([approved.code, approved.stderr]).toEqual([0, '']);
      expect(approved.stdout.split('\n')[0]).toBe('approved b1 (bash {"command":"echo hi > made.txt"}) as alice');
      const r = await h.result();
      expect([r.status, r.finalText]).toEqual(['completed', 'made it']);
      expect(readFileSync(join(workspace, 'made.txt'), 'utf8')).toBe('hi\n');
      expect(await workflowTaskFailures(h)).toEqual([]);
    } finally {
      await client.close();
      expect(await stopChild(worker.child)).toBe(0);
    }
  }, 120_000);

  it('--approve without an approvals flag is refused before it starts (exit 2), naming both choices', async () => {
    const out = await keelCli(['--address', inject('temporalAddress'), 'worker', '--approve', 'bash']);
    expect(out).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'keel: tools bash wait for approval, but nothing says who may approve: give --approvals-jwks <file>, ' +
        '--approvals-jwks-url <url> or --approvals-hmac-secret-file <file> to accept only signed decisions, or ' +
        '--approvals-unauthenticated to accept any approver name (development only)\n',
    });
  });

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
