/**
 * `npm run worker` / the docker-compose worker (`node dist/worker/main.js`): a Keel worker with the built-in tools on a
 * workspace directory and the default model providers (scripted rule files, pi-ai). Configuration from the
 * environment only: TEMPORAL_ADDRESS (default localhost:7233), TEMPORAL_NAMESPACE (default), TLS / API key / profile
 * through the standard TEMPORAL_TLS_*, TEMPORAL_API_KEY, TEMPORAL_PROFILE and TEMPORAL_CONFIG_FILE (common/connection.ts),
 * KEEL_TASK_QUEUE (keel),
 * KEEL_WORKSPACE (the tools' root; default the current directory), KEEL_LOCAL_READ_TOOLS=1 (read, ls, grep and find as
 * local activities, docs/local-tools.md; default off), KEEL_WORKER_ROLE (model, tools or all, the default: README
 * "Worker roles"), provider keys such as ANTHROPIC_API_KEY or ANTHROPIC_API_KEY_FILE (a file holding the key).
 * A failure to start prints one line (the stack only with KEEL_DEBUG=1) and exits 1.
 */
import { builtinTools } from '../activities/tools/builtin/index.js';
import { toolTaskQueue, WORKER_ROLES, type WorkerRole } from '../common/task-queues.js';
import { createAgentWorker } from './create-worker.js';

async function main(): Promise<void> {
  const address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const taskQueue = process.env.KEEL_TASK_QUEUE ?? 'keel';
  const workspace = process.env.KEEL_WORKSPACE || process.cwd();
  const role = (process.env.KEEL_WORKER_ROLE || 'all') as WorkerRole;
  if (!WORKER_ROLES.includes(role))
    throw new Error(`KEEL_WORKER_ROLE must be one of ${WORKER_ROLES.join(', ')} (got ${JSON.stringify(role)})`);
  const worker = await createAgentWorker({
    address,
    namespace: process.env.TEMPORAL_NAMESPACE,
    taskQueue,
    role,
    tools: builtinTools({ cwd: workspace, localReadTools: process.env.KEEL_LOCAL_READ_TOOLS === '1' }),
  }).catch((err: unknown) => {
    throw new Error(
      `cannot start a worker against Temporal at ${address}: ${err instanceof Error ? err.message : String(err)}. ` +
        'Check TEMPORAL_ADDRESS (and that the server is up).',
      { cause: err },
    );
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void worker.shutdown());
  const queues =
    role === 'tools'
      ? `(role tools) on task queue ${toolTaskQueue(taskQueue)}`
      : role === 'model'
        ? `(role model) on task queue ${taskQueue} (tools on ${toolTaskQueue(taskQueue)})`
        : `on task queue ${taskQueue}`;
  console.log(`[keel] worker ${queues} at ${address}, workspace ${workspace}`);
  await worker.run();
}

main().catch((err: unknown) => {
  process.stderr.write(`[keel] ${err instanceof Error ? err.message : String(err)}\n`);
  if (process.env.KEEL_DEBUG && err instanceof Error) process.stderr.write(`${String(err.stack)}\n`);
  process.exit(1);
});
