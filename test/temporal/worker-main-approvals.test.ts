/**
 * `npm run worker` / the compose worker (worker/main.ts) takes its approval settings from the environment
 * (worker/approvals/env.ts, README "Production-like topology"): with `KEEL_APPROVE=bash` and
 * `KEEL_APPROVALS_HMAC_SECRET_FILE`, a run's bash call waits; an unsigned decision is refused with the run's exact text
 * and changes nothing; a decision signed with the file's secret runs the call once, recorded under the token's subject.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { mintApprovalToken } from '../../client/approval-token.js';
import { killWorker } from './child-worker.js';
import { refusal, until } from './harness.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SECRET = 'a-compose-secret-of-at-least-32-bytes!';

describe('worker/main.ts with approvals from the environment', () => {
  const dir = mkdtempSync(join(tmpdir(), 'keel-main-approvals-'));
  const taskQueue = `main-approvals-${randomUUID()}`;
  let worker: ChildProcess | undefined;
  let stdout = '';
  let client: AgentClient;

  beforeAll(async () => {
    const secretFile = join(dir, 'approvals-hmac');
    writeFileSync(secretFile, `${SECRET}\n`, { mode: 0o600 });
    writeFileSync(
      join(dir, 'rules.json'),
      JSON.stringify({
        rules: [
          { match: 'toolResult:bash', text: 'bash answered' },
          {
            toolCalls: [{ id: 'b-1', name: 'bash', arguments: { command: 'echo ran >> count.txt; cat count.txt' } }],
          },
        ],
      }),
    );
    const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
      cwd: ROOT,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: inject('temporalAddress'),
        KEEL_TASK_QUEUE: taskQueue,
        KEEL_DEPLOYMENT_NAME: taskQueue, // its own deployment (README "Upgrades": one per application)
        KEEL_WORKSPACE_ROOT: join(dir, 'workspaces'),
        KEEL_APPROVE: 'bash',
        KEEL_APPROVALS_HMAC_SECRET_FILE: secretFile,
        KEEL_APPROVAL_HMAC_SECRET: '',
        KEEL_APPROVALS_AUTHENTICATION: '',
        KEEL_DEBUG: '1',
      },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    worker = child;
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d: Buffer) => {
        stdout += d.toString();
        if (stdout.includes('\n')) resolve();
      });
      child.on('exit', (code) => reject(new Error(`worker/main.ts exited with ${code}`)));
    });
    client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
  }, 180_000);

  afterAll(async () => {
    await client?.close();
    if (worker) await killWorker(worker);
    rmSync(dir, { recursive: true, force: true });
  });

  it('says which calls wait; the unsigned decision is refused, the signed one runs the call once', async () => {
    expect(stdout).toMatch(/^\[keel\] worker on task queue \S+ at \S+, .*, calls of bash wait for approval\n$/);
    expect(stdout).not.toContain(SECRET);
    const h = await client.start(
      { model: `scripted/${join(dir, 'rules.json')}`, prompt: 'run it', tools: ['bash'] },
      { workflowId: `main-approvals-${randomUUID()}` },
    );
    await until(async () => (await h.state()).pendingApprovals.length === 1, 120_000, 'the bash call waits');
    const [{ toolCallId, toolName, argsDigest, requestId }] = (await h.state()).pendingApprovals;
    expect([toolCallId, toolName]).toEqual(['b-1', 'bash']);

    expect(await refusal(h.approve({ toolCallId, argsDigest, approver: 'mallory' }))).toBe(
      'approve: this run accepts only signed decisions: pass token, a JWT bound to this run, tool call and argsDigest (README "Who may approve")',
    );
    expect((await h.state()).pendingApprovals.map((p) => p.toolCallId)).toEqual(['b-1']);

    const token = await mintApprovalToken({
      secret: SECRET,
      subject: 'alice',
      workflowId: h.workflowId,
      toolCallId,
      argsDigest,
      requestId: requestId!,
      decision: 'approve',
    });
    await h.approve({ toolCallId, argsDigest, token });
    const result = await h.result();
    expect(result.status).toBe('completed');
    expect(result.finalText).toBe('bash answered');
    const toolResults = result.newMessages.filter((m) => m.role === 'toolResult');
    expect(toolResults.map((m) => [m.toolCallId, m.content])).toEqual([['b-1', [{ type: 'text', text: 'ran\n' }]]]);
    const state = await h.state();
    expect(state.approvals.map((a) => [a.toolCallId, a.decision, a.approver, a.subject])).toEqual([
      ['b-1', 'approved', 'alice', 'alice'],
    ]);
    // the run ran on the deployment KEEL_DEPLOYMENT_NAME named
    const described = await client.client.workflow.getHandle(h.workflowId).describe();
    expect(described.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.deploymentName).toBe(taskQueue);
  }, 180_000);
});
