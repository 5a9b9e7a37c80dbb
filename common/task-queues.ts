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

/**
 * The activities that go to the tool queue (`toolTaskQueue`): what a `tools` worker runs, and what an `all` worker runs
 * on its second queue. A `model` worker registers stand-ins that refuse them (worker/plugin.ts).
 */
export const TOOL_QUEUE_ACTIVITIES = ['prepareToolCalls', 'executeToolCall', 'runToolCall', 'workerHome'] as const;

/**
 * The activities that run one tool call and return its outcome (`runToolCall` wraps it, `executeToolCall` returns it
 * bare): the ones whose outcome the worker records — the telemetry span and metrics (worker/activity-telemetry.ts) and
 * the durable store of a finished outcome (worker/store-finished-outcome.ts).
 */
export const TOOL_CALL_ACTIVITIES: ReadonlySet<string> = new Set(['runToolCall', 'executeToolCall']);
