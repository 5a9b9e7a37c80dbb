/**
 * Worker Deployment Versioning for Keel workers. A worker declares a deployment (default `keel`) and a build id
 * (default `<package version>+<git sha>`); runs are pinned to the build they started on while they work, and an idle
 * session moves to the deployment's current version at its next continue-as-new (workflows/agent/workflow.ts).
 * `makeCurrent` promotes this worker's build once it polls: what `keel dev`, `keel worker` and the tests want; on a
 * cluster an operator may instead roll out with `temporal worker deployment set-current-version`.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { WorkerDeploymentOptions } from '@temporalio/worker';
import { PACKAGE_ROOT as ROOT, packageVersion } from '../node-common/package-version.js';

export const DEFAULT_DEPLOYMENT_NAME = 'keel';

export interface DeploymentOptions {
  /** Default `keel`. */
  deploymentName?: string;
  /** Default `$KEEL_BUILD_ID`, else `<package version>+<git sha>` (or the version alone outside a git checkout). */
  buildId?: string;
  /** Make this build the deployment's current version once the worker polls (default true). */
  makeCurrent?: boolean;
}

/** `<version>+<short sha>` of this checkout; the version alone when git is unavailable (an installed package). */
export function defaultBuildId(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KEEL_BUILD_ID) return env.KEEL_BUILD_ID;
  const version = packageVersion();
  if (!existsSync(new URL('.git', ROOT))) return version; // an installed package: not this checkout's history
  try {
    const sha = execFileSync('git', ['rev-parse', '--short=12', 'HEAD'], {
      cwd: ROOT,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    return sha ? `${version}+${sha}` : version;
  } catch {
    return version;
  }
}

export function workerDeploymentOptions(opts: DeploymentOptions): WorkerDeploymentOptions {
  return {
    useWorkerVersioning: true,
    version: {
      deploymentName: opts.deploymentName ?? DEFAULT_DEPLOYMENT_NAME,
      buildId: opts.buildId ?? defaultBuildId(),
    },
    defaultVersioningBehavior: 'PINNED',
  };
}

/**
 * Makes `version` the current version of its deployment, retrying while the server has not yet seen a poller of it
 * (a worker registers its version with its first poll); with `taskQueue`, also waits until that task queue routes new
 * runs to it (the deployment's routing reaches its task queues a moment later). Rejects after `timeoutMs`, or at once
 * with `signal.reason` when `signal` aborts (the worker is shutting down: its connection is about to close, and
 * retrying on a closed client only repeats `Client already closed`).
 */
export async function setCurrentVersion(
  client: Client,
  namespace: string,
  version: { deploymentName: string; buildId: string },
  taskQueue?: string,
  timeoutMs = 60_000,
  signal?: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (let delay = 100; Date.now() < deadline; delay = Math.min(delay * 2, 1000)) {
    signal?.throwIfAborted();
    try {
      const described = await client.workflowService
        .describeWorkerDeployment({ namespace, deploymentName: version.deploymentName })
        .catch(() => undefined);
      const current = described?.workerDeploymentInfo?.routingConfig?.currentDeploymentVersion?.buildId;
      if (current !== version.buildId) {
        await client.workflowService.setWorkerDeploymentCurrentVersion({
          namespace,
          deploymentName: version.deploymentName,
          buildId: version.buildId,
          identity: `keel-${process.pid}`,
          conflictToken: described?.conflictToken ?? undefined,
        });
      }
      if (!taskQueue || (await routedBuild(client, namespace, taskQueue)) === version.buildId) return;
    } catch (err) {
      signal?.throwIfAborted();
      lastError = err;
    }
    await sleep(delay, undefined, signal ? { signal } : undefined).catch(() => signal?.throwIfAborted());
  }
  throw new Error(
    `could not make build ${version.buildId} current in deployment ${version.deploymentName}` +
      `${lastError ? `: ${String(lastError)}` : ''}; ${whatToDo(lastError, version.deploymentName)}`,
  );
}

/** The operator's next step for a build that could not become current. */
function whatToDo(err: unknown, deploymentName: string): string {
  if (/missing active task queues/i.test(String(err)))
    return (
      `another application's workers share deployment ${deploymentName} on other task queues: give this worker ` +
      `its own deployment (\`versioning.deploymentName\`, \`keel worker --deployment-name <name>\`, ` +
      `$KEEL_DEPLOYMENT_NAME for \`npm run worker\`)`
    );
  return 'check the server supports Worker Deployments, or start the worker with versioning off';
}

/** `temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW` (a plain number: the proto package is CommonJS). */
const TASK_QUEUE_TYPE_WORKFLOW = 1;

/** The build the task queue routes new workflow tasks to. */
async function routedBuild(client: Client, namespace: string, taskQueue: string): Promise<string | undefined> {
  const q = await client.workflowService.describeTaskQueue({
    namespace,
    taskQueue: { name: taskQueue },
    taskQueueType: TASK_QUEUE_TYPE_WORKFLOW,
  });
  return q.versioningInfo?.currentDeploymentVersion?.buildId ?? undefined;
}
