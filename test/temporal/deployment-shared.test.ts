/**
 * Two applications that share a Worker Deployment name on different task queues: Temporal refuses to make the second
 * one's build current (the first one's task queues would become unversioned). The refusal says what to do: give the
 * worker its own deployment. (It used to say "check the server supports Worker Deployments", which sent the operator
 * the wrong way; the package test met it in CI, its consumer on the default deployment `keel` beside `keel worker`.)
 */
import { randomUUID } from 'node:crypto';
import { afterAll, describe, expect, inject, it, vi } from 'vitest';
import { scriptedModel } from '../../activities/model/scripted.js';
import { AgentClient } from '../../client/agent-client.js';
import { createAgentWorker, type AgentWorker } from '../../worker/create-worker.js';
import { setCurrentVersion } from '../../worker/deployment.js';

const deploymentName = `shared-${randomUUID().slice(0, 8)}`;
const workers: AgentWorker[] = [];

async function app(taskQueue: string, buildId: string, makeCurrent: boolean): Promise<AgentWorker> {
  const worker = await createAgentWorker({
    address: inject('temporalAddress'),
    taskQueue,
    models: { scripted: scriptedModel({ s: { rules: [{ text: `answered by ${buildId}` }] } }) },
    workflowBundle: { codePath: inject('workflowBundlePath') },
    buildId,
    versioning: { deploymentName, makeCurrent },
  });
  workers.push(worker);
  void worker.run().catch(() => undefined);
  return worker;
}

afterAll(async () => {
  await Promise.all(workers.map((w) => w.shutdown().catch(() => undefined)));
});

describe('a deployment name shared by two applications', () => {
  it("the second build is refused as current, with what to do; the first one's routing is untouched", async () => {
    const taskQueue = `shared-a-${randomUUID()}`;
    const first = await app(taskQueue, 'first', true);
    await first.ready();
    const client = await AgentClient.connect({ address: inject('temporalAddress'), taskQueue });
    // the first application's task queue is active: it ran a run
    const run = await client.start({ model: 'scripted/s', prompt: 'hi' });
    expect((await run.result()).finalText).toBe('answered by first');
    await app(`shared-b-${randomUUID()}`, 'second', false);
    const builds = async () =>
      (
        await client.client.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName })
      ).workerDeploymentInfo?.versionSummaries?.map((v) => v.deploymentVersion?.buildId);
    // the second build registers with its first poll
    await vi.waitFor(async () => expect((await builds())?.sort()).toEqual(['first', 'second']), { timeout: 30_000 });
    const refused = await setCurrentVersion(
      client.client,
      'default',
      { deploymentName, buildId: 'second' },
      undefined,
      2000,
    ).catch((e: Error) => e.message);
    expect(refused).toMatch(
      new RegExp(
        `^could not make build second current in deployment ${deploymentName}: .*missing active task queues.*; ` +
          `another application's workers share deployment ${deploymentName} on other task queues: give this worker ` +
          'its own deployment \\(`versioning.deploymentName`, `keel worker --deployment-name <name>`, ' +
          '\\$KEEL_DEPLOYMENT_NAME for `npm run worker`\\)$',
      ),
    );
    const d = await client.client.workflowService.describeWorkerDeployment({ namespace: 'default', deploymentName });
    expect(d.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId).toBe('first');
    await client.close();
  });
});
