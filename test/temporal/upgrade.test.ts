/**
 * Runs outlive a deploy (Worker Deployment Versioning): a run is pinned to its build while a turn runs; an idle
 * session moves to the deployment's new current version at its next continue-as-new; once every session has moved,
 * the old build's workers can stop and nothing is stuck.
 */
import { randomUUID } from 'node:crypto';
import { temporal } from '@temporalio/proto';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import { AgentClient, type AgentRunHandle } from '../../client/agent-client.js';
import { createAgentWorker, type AgentWorker } from '../../worker/create-worker.js';
import { gate, until, workflowTaskFailures } from './harness.js';

const deploymentName = `keel-upgrade-${randomUUID().slice(0, 8)}`;
const taskQueue = `upgrade-${randomUUID()}`;
let release = gate();
let holding = 0;

/** One build: its model and its tool say which build they ran on. */
async function build(buildId: string): Promise<AgentWorker> {
  const hold = defineTool({
    name: 'hold',
    description: 'Waits for the test.',
    parameters: { type: 'object', properties: {} },
    execute: async () => {
      holding += 1;
      await release.promise;
      return { content: [{ type: 'text', text: `tool ran on ${buildId}` }] };
    },
  });
  const worker = await createAgentWorker({
    address: inject('temporalAddress'),
    taskQueue,
    tools: [hold],
    models: {
      scripted: scriptedModel({
        s: {
          rules: [
            { match: 'work', toolCalls: [{ id: 'h-1', name: 'hold', arguments: {} }] },
            { text: `answered by ${buildId}` },
          ],
        },
      }),
    },
    workflowBundle: { codePath: inject('workflowBundlePath') },
    buildId, // the shorthand for versioning.buildId
    versioning: { deploymentName, makeCurrent: true },
  });
  void worker.run().catch(() => undefined);
  return worker;
}

/** The current build as the task queue routes it (the deployment's routing reaches the task queue a moment later). */
async function currentBuild(client: AgentClient): Promise<string | undefined> {
  const d = await client.client.workflowService
    .describeWorkerDeployment({ namespace: 'default', deploymentName })
    .catch(() => undefined);
  const deployment = d?.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId ?? undefined;
  const q = await client.client.workflowService
    .describeTaskQueue({
      namespace: 'default',
      taskQueue: { name: taskQueue },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    })
    .catch(() => undefined);
  const routed = q?.versioningInfo?.currentDeploymentVersion?.buildId ?? undefined;
  return deployment === routed ? deployment : undefined;
}

/** The build the run's latest execution is pinned to. */
async function pinnedTo(h: AgentRunHandle): Promise<string | undefined> {
  const d = await h.workflow.describe();
  const v = d.raw.workflowExecutionInfo?.versioningInfo;
  return v?.deploymentVersion?.buildId ?? undefined;
}

const lastText = async (h: AgentRunHandle) => (await h.state()).lastReply;
const idle = (h: AgentRunHandle, turns: number) =>
  until(
    async () => {
      const s = await h.state();
      return s.status === 'waiting' && s.turns >= turns;
    },
    60_000,
    `idle after ${turns} turns`,
  );

describe('upgrading Keel with runs in flight', () => {
  const workers: AgentWorker[] = [];
  let client: AgentClient;
  afterAll(async () => {
    release.open();
    for (const w of workers) await w.shutdown().catch(() => undefined);
    await client?.close();
  });

  it('idle sessions move to the new build; a turn in progress finishes on the old one; then the old build can stop', async () => {
    client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    const a = await build('build-a');
    workers.push(a);
    await until(async () => (await currentBuild(client)) === 'build-a', 60_000, 'build-a current');

    // S1 parks waiting on A; S2 is in the middle of a turn on A (its tool is held)
    const s1 = await client.start(
      { model: 'scripted/s', prompt: 'hello', mode: 'session' },
      { workflowId: `upgrade-s1-${randomUUID()}` },
    );
    await idle(s1, 1);
    expect(await lastText(s1)).toBe('answered by build-a');
    release = gate();
    holding = 0;
    const s2 = await client.start(
      { model: 'scripted/s', prompt: 'work', tools: ['hold'], mode: 'session' },
      { workflowId: `upgrade-s2-${randomUUID()}` },
    );
    await until(() => holding === 1, 30_000, 'S2 tool running on A');

    // build B is deployed and becomes current; A keeps running
    const b = await build('build-b');
    workers.push(b);
    await until(async () => (await currentBuild(client)) === 'build-b', 60_000, 'build-b current');
    expect(await pinnedTo(s1)).toBe('build-a');

    // a follow-up to the idle S1: the session continues-as-new onto B, where the next turn runs
    await s1.followUp('again');
    await idle(s1, 2);
    expect(await lastText(s1)).toBe('answered by build-b');
    expect(await pinnedTo(s1)).toBe('build-b');
    expect((await s1.state()).continuedAsNew).toBe(1);

    // S2's turn was pinned to A: it finishes there, then the idle session moves to B
    release.open();
    await idle(s2, 2);
    const s2Messages = await s2.allMessages();
    expect(s2Messages.find((m) => m.role === 'toolResult')).toMatchObject({
      content: [{ type: 'text', text: 'tool ran on build-a' }],
    });
    expect(await lastText(s2)).toBe('answered by build-a');
    await until(async () => (await pinnedTo(s2)) === 'build-b', 30_000, 'S2 moved to build-b');

    // the old build stops: nothing is stuck
    await a.shutdown();
    await s1.followUp('once more');
    await s2.followUp('and you');
    await idle(s1, 3);
    await idle(s2, 3);
    expect(await lastText(s1)).toBe('answered by build-b');
    expect(await lastText(s2)).toBe('answered by build-b');
    for (const h of [s1, s2]) {
      expect(await workflowTaskFailures(h)).toEqual([]);
      await h.end();
      expect((await h.result()).status).toBe('completed');
    }
    // the whole transcript survived the moves
    expect((await s1.allMessages()).map((m) => m.role)).toEqual([
      'user',
      'assistant',
      'user',
      'assistant',
      'user',
      'assistant',
    ]);
  }, 240_000);
});
