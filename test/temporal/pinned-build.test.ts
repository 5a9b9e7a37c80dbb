/**
 * A session pinned to a build whose workers were stopped (issue 20 item 8): `keel status` and `keel send` say so and
 * print the two ways out instead of failing with `Failed to query Workflow` or waiting for an acknowledgement that
 * never comes; the printed `temporal workflow update-options` command, run with the project's Temporal CLI 1.9.1,
 * moves the run to the current build, which then answers.
 */
import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { scriptedModel } from '../../activities/model/scripted.js';
import { AgentClient } from '../../client/agent-client.js';
import { LIVE_POLL_SECONDS } from '../../cli/run/pinned.js';
import { ensureTemporalCli } from '../../scripts/temporal-cli.mjs';
import { createAgentWorker, type AgentWorker } from '../../worker/create-worker.js';
import { quietRuntime, until, workflowTaskFailures } from './harness.js';

const BIN = fileURLToPath(new URL('../../bin/keel.mjs', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

type Result = { code: number | null; stdout: string; stderr: string };
function exec(cmd: string, args: string[]): Promise<Result> {
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: ROOT, env: { ...process.env, NO_COLOR: '1' }, timeout: 60_000 }, (err, stdout, stderr) =>
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

const id = randomUUID().slice(0, 8);
const deploymentName = `pinned-${id}`;
const taskQueue = `pinned-${id}`;
const workers: AgentWorker[] = [];

async function build(buildId: string): Promise<AgentWorker> {
  const w = await createAgentWorker({
    address: inject('temporalAddress'),
    taskQueue,
    models: { scripted: scriptedModel({ s: { rules: [{ text: `answered by ${buildId}` }] } }) },
    workflowBundle: { codePath: inject('workflowBundlePath') },
    buildId,
    versioning: { deploymentName },
  });
  workers.push(w);
  void w.run().catch(() => undefined);
  await w.ready();
  return w;
}

afterAll(async () => {
  for (const w of workers) await w.shutdown().catch(() => undefined);
});

describe('a session pinned to a stopped build', () => {
  it('keel status and keel send name the build and the two ways out; the printed override moves the run', async () => {
    quietRuntime();
    const address = inject('temporalAddress');
    const a = await build(`a-${id}`);
    const client = await AgentClient.connect({ address, taskQueue });
    const workflowId = `pinned-${id}`;
    const run = await client.start({ model: 'scripted/s', prompt: 'hi', mode: 'session' }, { workflowId });
    await until(async () => (await run.state()).status === 'waiting', 30_000, 'first agent run');
    await build(`b-${id}`); // now current
    await a.shutdown();

    const keel = (...args: string[]) => exec(process.execPath, [BIN, '--address', address, ...args]);
    const hint = (seconds: string) =>
      `keel: Run ${workflowId} is pinned to build a-${id} of deployment ${deploymentName}, and no worker of that build ` +
      `has polled task queue ${taskQueue} for ${seconds} s: the run waits for one (queries fail, messages are not acknowledged).\n` +
      `Either start build a-${id}'s workers again (its code, with --build-id a-${id}),\n` +
      `or move the run to the current build b-${id} (its code must replay the run's history):\n` +
      `  temporal workflow update-options --address ${address} --namespace default --workflow-id ${workflowId} ` +
      `--versioning-override-behavior pinned --versioning-override-deployment-name ${deploymentName} ` +
      `--versioning-override-build-id b-${id}\n`;
    // the server keeps a stopped worker's last poll: it counts as gone once that is over LIVE_POLL_SECONDS old
    let status: Result | undefined;
    await vi.waitFor(
      async () => {
        status = await keel('status', workflowId);
        expect(status.code, status.stdout + status.stderr).toBe(3);
      },
      { timeout: (LIVE_POLL_SECONDS + 60) * 1000, interval: 5000 },
    );
    const seconds = /for (\d+) s:/.exec(status!.stderr)?.[1] ?? '?';
    expect(Number(seconds)).toBeGreaterThan(LIVE_POLL_SECONDS);
    expect(status).toEqual({ code: 3, stdout: '', stderr: hint(seconds) });

    const send = await keel('send', workflowId, 'still there?');
    expect(send.code).toBe(3);
    expect(send.stderr).toBe(hint(/for (\d+) s:/.exec(send.stderr)?.[1] ?? '?'));

    // the printed override, pasted (with this project's Temporal CLI for `temporal`)
    const command = send.stderr.trim().split('\n').at(-1)!.trim().split(' ');
    expect(command[0]).toBe('temporal');
    const moved = await exec(await ensureTemporalCli(), command.slice(1));
    expect(moved.code, moved.stderr).toBe(0);

    const ack = await keel('send', workflowId, 'again');
    expect(ack.code, ack.stderr).toBe(0);
    expect(ack.stdout.split('\n')[0]).toBe(`followUp → ${workflowId}: queued 0 steering, 1 follow-up`);
    await until(
      async () => (await run.state()).runs === 2 && (await run.state()).status === 'waiting',
      30_000,
      'moved',
    );
    const last = (await run.allMessages()).at(-1)!;
    expect(last.role === 'assistant' && last.content.map((b) => (b.type === 'text' ? b.text : '')).join('')).toBe(
      `answered by b-${id}`,
    );
    await run.end();
    expect(await workflowTaskFailures(run)).toEqual([]);
    await client.close();
  }, 240_000);
});
