/**
 * `npm run worker` / the docker-compose worker: a Keel worker with the built-in tools on a workspace directory and the
 * default model providers (scripted rule files, pi-ai). Configuration from the environment only:
 * TEMPORAL_ADDRESS (default localhost:7233), TEMPORAL_NAMESPACE (default), TLS / API key / profile through the
 * standard TEMPORAL_TLS_*, TEMPORAL_API_KEY, TEMPORAL_PROFILE and TEMPORAL_CONFIG_FILE (common/connection.ts), KEEL_TASK_QUEUE (keel),
 * KEEL_WORKSPACE (the tools' root; default the current directory), provider keys such as ANTHROPIC_API_KEY.
 */
import { builtinTools } from '../activities/tools/builtin/index.js';
import { createAgentWorker } from './create-worker.js';

const workspace = process.env.KEEL_WORKSPACE ?? process.cwd();
const worker = await createAgentWorker({
  address: process.env.TEMPORAL_ADDRESS,
  namespace: process.env.TEMPORAL_NAMESPACE,
  taskQueue: process.env.KEEL_TASK_QUEUE,
  tools: builtinTools({ cwd: workspace }),
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.once(signal, () => void worker.shutdown());
console.log(`[keel] worker on task queue ${process.env.KEEL_TASK_QUEUE ?? 'keel'} at ${process.env.TEMPORAL_ADDRESS ?? 'localhost:7233'}, workspace ${workspace}`);
await worker.run();
