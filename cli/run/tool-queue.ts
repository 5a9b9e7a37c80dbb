/**
 * A run's tool calls wait silently when no worker polls its tool queue (issue 33 item 18): with roles split
 * (README "Worker roles") and the `tools` worker stopped, `keel run` printed the call and then nothing, and `keel
 * status` said `turn 1 in progress`. `keel run`, `keel watch` and `keel status` warn on stderr as `keel start` does
 * for an unpolled task queue, with a worker command to paste.
 *
 * "Polled": a poller of activities on `<queue>-tools` within the last LIVE_POLL_SECONDS (the server lists a stopped
 * worker for minutes after its last poll; a live idle one polls at least once a minute). Informational only: any error
 * of the check is swallowed.
 */
import type { WorkflowExecutionDescription } from '@temporalio/client';
import type { LoggedEvent } from '../../common/events.js';
import { resolveConnection } from '../../node-common/connection.js';
import { DEFAULT_TASK_QUEUE, toolTaskQueue } from '../../common/task-queues.js';
import type { AgentClient } from '../../client/agent-client.js';
import { shellWord, type GlobalOptions } from '../context.js';
import { LIVE_POLL_SECONDS } from './pinned.js';

/** `temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY`. */
const ACTIVITY_QUEUE = 2;

/** `npx keel worker --role tools` with the flags a new shell needs to reach `address` and serve `taskQueue`. */
export function toolsWorkerCommand(g: Pick<GlobalOptions, 'address' | 'namespace'>, taskQueue: string): string {
  const defaults = resolveConnection({});
  const flags = [
    ...(defaults.address === g.address ? [] : ['--address', g.address]),
    ...(defaults.namespace === g.namespace ? [] : ['--namespace', g.namespace]),
    ...((process.env.KEEL_TASK_QUEUE ?? DEFAULT_TASK_QUEUE) === taskQueue ? [] : ['--task-queue', taskQueue]),
  ];
  return ['npx', 'keel', 'worker', '--role', 'tools', ...flags].map(shellWord).join(' ');
}

/** The warning for a run on `taskQueue` whose tool queue no worker polls. */
export function noToolWorkerWarning(g: Pick<GlobalOptions, 'address' | 'namespace'>, taskQueue: string): string {
  return (
    `[keel] no worker is polling task queue "${toolTaskQueue(taskQueue)}" right now; the run's tool calls wait until one does.\n` +
    `       Start one with \`${toolsWorkerCommand(g, taskQueue)}\` (or any worker with --role all).\n`
  );
}

/** Whether some worker polled the activities of `taskQueue`'s tool queue within LIVE_POLL_SECONDS; true on error. */
async function toolQueuePolled(client: AgentClient, namespace: string, taskQueue: string): Promise<boolean> {
  try {
    const r = await client.client.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: toolTaskQueue(taskQueue), kind: 1 },
      taskQueueType: ACTIVITY_QUEUE,
    });
    const now = Date.now() / 1000;
    return (r.pollers ?? []).some((p) => now - Number(p.lastAccessTime?.seconds ?? 0) <= LIVE_POLL_SECONDS);
  } catch {
    return true; // informational only
  }
}

/** The activities a run schedules on its tool queue (workflows/agent/tool-call.ts, tool-placement.ts). */
const TOOL_QUEUE_ACTIVITIES = new Set(['prepareToolCalls', 'runToolCall', 'executeToolCall', 'workerHome']);

/** The run has a tool activity scheduled or running (a call in progress, or waiting for a worker to take it). */
export function awaitsToolActivity(d: WorkflowExecutionDescription): boolean {
  return (d.raw.pendingActivities ?? []).some((a) => TOOL_QUEUE_ACTIVITIES.has(a.activityType?.name ?? ''));
}

/** Writes the warning on stderr when no worker polls the tool queue of a run on `taskQueue`. */
export async function warnIfNoToolWorker(client: AgentClient, g: GlobalOptions, taskQueue: string): Promise<void> {
  if (!(await toolQueuePolled(client, g.namespace, taskQueue))) process.stderr.write(noToolWorkerWarning(g, taskQueue));
}

/**
 * An `onEvent` for followRun: at the run's first `tool_execution_start` (the call is printed, its activity is
 * scheduled) checks the tool queue once, and warns when nobody polls it.
 */
export function toolQueueWatch(client: AgentClient, g: GlobalOptions, taskQueue: string): (e: LoggedEvent) => void {
  let checked = false;
  return (e) => {
    if (checked || e.type !== 'tool_execution_start') return;
    checked = true;
    void warnIfNoToolWorker(client, g, taskQueue);
  };
}
