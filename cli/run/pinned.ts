/**
 * A run pinned to a build that no worker serves any more (issue 20 item 8). A pinned run's workflow tasks and queries
 * go only to workers of its build; when the operator stopped that build before the run moved, a follow-up is never
 * acknowledged and every query fails with `Failed to query Workflow`, with no word of why. `keel status` and the
 * Update commands (`send`, `steer`, …) check first and say what to do.
 *
 * "No worker": no poller of that build on the run's task queue within the last LIVE_POLL_SECONDS. A live idle worker
 * re-polls at least once a minute (the server's long-poll expiry), and the server keeps a stopped worker's last poll
 * time, so a build that stopped is recognised at most about 70 s after its last poll.
 */
import type { WorkflowExecutionDescription } from '@temporalio/client';
import type { AgentClient } from '../../client/agent-client.js';
import { CliError, EXIT, type GlobalOptions } from '../context.js';

/** How recent a poll must be for the build to count as served (the server's 60 s long poll, plus a margin). */
export const LIVE_POLL_SECONDS = 70;

/** `temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED`. */
const PINNED = 1;
/** `temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW`. */
const WORKFLOW_QUEUE = 1;

export interface StrandedRun {
  workflowId: string;
  taskQueue: string;
  deploymentName: string;
  buildId: string;
  /** Seconds since that build last polled the task queue; undefined: the server has no poll of it on record. */
  lastPollSecondsAgo?: number;
  /** The deployment's current build, when it is another one with a live worker (then the run can move there). */
  movableTo?: string;
}

/** The run is pinned to a build no worker polls (see the module comment); undefined when it is not. Never throws. */
export async function strandedRun(
  client: AgentClient,
  namespace: string,
  d: WorkflowExecutionDescription,
): Promise<StrandedRun | undefined> {
  try {
    const info = d.raw.workflowExecutionInfo?.versioningInfo;
    const version = info?.deploymentVersion;
    if (d.status.name !== 'RUNNING' || !info || Number(info.behavior) !== PINNED || info.versioningOverride)
      return undefined;
    if (!version?.buildId || !version.deploymentName) return undefined;
    const q = await client.client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: d.taskQueue },
      taskQueueType: WORKFLOW_QUEUE,
    });
    const now = Date.now() / 1000;
    const ago = (buildId: string) => {
      const polls = (q.pollers ?? [])
        .filter(
          (p) =>
            p.deploymentOptions?.deploymentName === version.deploymentName && p.deploymentOptions?.buildId === buildId,
        )
        .map((p) => now - Number(p.lastAccessTime?.seconds ?? 0));
      return polls.length ? Math.max(0, Math.round(Math.min(...polls))) : undefined;
    };
    const last = ago(version.buildId);
    if (last !== undefined && last <= LIVE_POLL_SECONDS) return undefined;
    const current = q.versioningInfo?.currentDeploymentVersion;
    const currentAgo = current?.buildId ? ago(current.buildId) : undefined;
    const movable =
      current?.buildId &&
      current.deploymentName === version.deploymentName &&
      current.buildId !== version.buildId &&
      currentAgo !== undefined &&
      currentAgo <= LIVE_POLL_SECONDS
        ? current.buildId
        : undefined;
    return {
      workflowId: d.workflowId,
      taskQueue: d.taskQueue,
      deploymentName: version.deploymentName,
      buildId: version.buildId,
      ...(last !== undefined ? { lastPollSecondsAgo: last } : {}),
      ...(movable ? { movableTo: movable } : {}),
    };
  } catch {
    return undefined; // cannot tell: the command goes on as before
  }
}

/** What to do about a stranded run: start its build again, or move it with a versioning override (pasteable). */
export function strandedText(s: StrandedRun, g: Pick<GlobalOptions, 'address' | 'namespace'>): string {
  const since =
    s.lastPollSecondsAgo !== undefined ? `for ${s.lastPollSecondsAgo} s` : 'since the server started (none on record)';
  const lines = [
    `Run ${s.workflowId} is pinned to build ${s.buildId} of deployment ${s.deploymentName}, and no worker of that build has polled task queue ${s.taskQueue} ${since}: the run waits for one (queries fail, messages are not acknowledged).`,
    `Either start build ${s.buildId}'s workers again (its code, with --build-id ${s.buildId}),`,
  ];
  if (s.movableTo)
    lines.push(
      `or move the run to the current build ${s.movableTo} (its code must replay the run's history):`,
      `  temporal workflow update-options --address ${g.address} --namespace ${g.namespace} --workflow-id ${s.workflowId} ` +
        `--versioning-override-behavior pinned --versioning-override-deployment-name ${s.deploymentName} ` +
        `--versioning-override-build-id ${s.movableTo}`,
    );
  else
    lines.push(
      `or move the run to a build that has workers: temporal workflow update-options with --versioning-override-behavior pinned (see docs/versioning.md).`,
    );
  return lines.join('\n');
}

/** Throws the stranded-run explanation (exit 3: nothing serves the run) when `d` is such a run. */
export async function refuseStranded(
  client: AgentClient,
  g: Pick<GlobalOptions, 'address' | 'namespace'>,
  d: WorkflowExecutionDescription,
): Promise<void> {
  const s = await strandedRun(client, g.namespace, d);
  if (s) throw new CliError(EXIT.unreachable, strandedText(s, g));
}
