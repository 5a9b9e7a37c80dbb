/**
 * Task queues a run uses besides its own (README "Worker roles"): shared by the workflow, which schedules on them, and
 * the workers, which poll them. Deterministic, no I/O (the workflow bundle imports it).
 */

/** The task queue of runs and workers when none is given (`AgentClient`, `createAgentWorker`, `keel`, other languages). */
export const DEFAULT_TASK_QUEUE = 'keel';

/** What a worker runs: `model` (workflows, model and compaction calls), `tools` (tool calls only), or `all`. */
export type WorkerRole = 'model' | 'tools' | 'all';

export const WORKER_ROLES: readonly WorkerRole[] = ['model', 'tools', 'all'];

/**
 * The task queue of a run's tool activities (preparation, execution, and the `workerHome` question) for runs on
 * `taskQueue`: `<taskQueue>-tools`, polled by workers with role `tools` and by every worker with role `all` (beside
 * `taskQueue`), so one `all` worker still serves a run alone. Runs recorded before 0.4.2 (patch
 * `keel-0.4.2-tool-queue`) keep their tools on `taskQueue`.
 */
export function toolTaskQueue(taskQueue: string): string {
  return `${taskQueue}-tools`;
}
