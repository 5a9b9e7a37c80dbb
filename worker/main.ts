/**
 * `npm run worker` / the docker-compose worker (`node dist/worker/main.js`): a Keel worker with the built-in tools on a
 * workspace directory and the default model providers (scripted rule files, pi-ai). Configuration from the
 * environment only: TEMPORAL_ADDRESS (default localhost:7233), TEMPORAL_NAMESPACE (default), TLS / API key / profile
 * through the standard TEMPORAL_TLS_*, TEMPORAL_API_KEY, TEMPORAL_PROFILE and TEMPORAL_CONFIG_FILE (node-common/connection.ts),
 * KEEL_TASK_QUEUE (keel), KEEL_DEPLOYMENT_NAME (the Worker Deployment, default keel: give each application in a
 * namespace its own) and KEEL_BUILD_ID (default <package version>+<git sha>),
 * KEEL_WORKSPACE_ROOT (where each conversation's workspace is made; default <tmpdir>/keel-workspaces-<uid>),
 * KEEL_WORKSPACE (instead: one workspace every run shares), KEEL_SANDBOX=none (tool processes unsandboxed, announced;
 * default bwrap, and the worker does not start where it cannot run), KEEL_SANDBOX_NETWORK=host (default none),
 * KEEL_LOCAL_READ_TOOLS=1 (read, ls, grep and find as local activities, docs/local-tools.md; default off),
 * KEEL_WORKER_ROLE (model, tools or all, the default: README "Worker roles"), KEEL_PROVIDER_LIMITS (limits shared by
 * the task queue's runs, `<key>:rpm=60,itpm=100000` separated by `;`: docs/provider-limits.md), provider keys such as ANTHROPIC_API_KEY
 * or ANTHROPIC_API_KEY_FILE (a file holding the key).
 * Approvals (README "Who may approve"; worker/approvals/env.ts), as `keel worker`'s flags: KEEL_APPROVE=bash,write
 * (tools whose every call waits for approval) and who may approve: KEEL_APPROVALS_JWKS_FILE, KEEL_APPROVALS_JWKS_URL
 * or KEEL_APPROVALS_HMAC_SECRET_FILE (the secret in a file), with KEEL_APPROVALS_ISSUER / KEEL_APPROVALS_AUDIENCE, or
 * KEEL_APPROVALS_AUTHENTICATION=none (any approver name, announced at start). KEEL_APPROVE without either refuses to
 * start. A tools worker (KEEL_WORKER_ROLE=tools) gates the calls of KEEL_APPROVE and decides none: the model worker,
 * given the same KEEL_APPROVE, verifies the decisions and needs the authentication.
 * A failure to start prints one line (the stack only with KEEL_DEBUG=1) and exits 1.
 */
import { builtinTools, defaultWorkspaceRoot, type SandboxNetwork } from '../activities/tools/builtin/index.js';
import { toolTaskQueue, WORKER_ROLES, type WorkerRole } from '../common/task-queues.js';
import { createAgentWorker } from './create-worker.js';
import { approvalsFromEnv } from './approvals/env.js';
import { approvalAskers } from './approvals/resolve.js';
import { thrownMessage } from '../common/errors.js';
import { parseLimitSpecs } from '../common/limits/definition.js';

async function main(): Promise<void> {
  const address = process.env.TEMPORAL_ADDRESS ?? 'localhost:7233';
  const taskQueue = process.env.KEEL_TASK_QUEUE ?? 'keel';
  const role = (process.env.KEEL_WORKER_ROLE || 'all') as WorkerRole;
  if (!WORKER_ROLES.includes(role))
    throw new Error(`KEEL_WORKER_ROLE must be one of ${WORKER_ROLES.join(', ')} (got ${JSON.stringify(role)})`);
  const shared = process.env.KEEL_WORKSPACE || undefined;
  const network: SandboxNetwork = process.env.KEEL_SANDBOX_NETWORK === 'host' ? 'host' : 'none';
  const sandbox = process.env.KEEL_SANDBOX === 'none' ? 'none' : { network };
  // a model worker registers the tools for their schemas and never runs them: no sandbox to check
  const builtin = builtinTools({
    ...(shared ? { cwd: shared } : {}),
    ...(role === 'model' ? { definitionsOnly: true } : { sandbox }),
    localReadTools: process.env.KEEL_LOCAL_READ_TOOLS === '1',
  });
  // before connecting: a worker whose approval settings are missing or contradict each other does not start
  const { tools, approvals } = approvalsFromEnv(builtin, role !== 'tools');
  const worker = await createAgentWorker({
    address,
    namespace: process.env.TEMPORAL_NAMESPACE,
    taskQueue,
    role,
    tools,
    ...(approvals ? { approvals } : {}),
    // KEEL_PROVIDER_LIMITS='anthropic:rpm=60,itpm=100000;openai/gpt-5*:rpm=500' (docs/provider-limits.md)
    ...(process.env.KEEL_PROVIDER_LIMITS ? { providerLimits: parseLimitSpecs(process.env.KEEL_PROVIDER_LIMITS) } : {}),
    ...(process.env.KEEL_DEPLOYMENT_NAME ? { versioning: { deploymentName: process.env.KEEL_DEPLOYMENT_NAME } } : {}),
  }).catch((err: unknown) => {
    throw new Error(
      `cannot start a worker against Temporal at ${address}: ${thrownMessage(err)}. ` +
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
  const where = shared
    ? `workspace ${shared} (shared by every run)`
    : `a workspace per conversation under ${defaultWorkspaceRoot()}`;
  const how =
    sandbox === 'none' ? 'sandbox NONE (tool processes run unsandboxed)' : `sandbox bwrap (network ${network})`;
  const gated = approvalAskers(tools, undefined);
  const gate = gated.length ? `, calls of ${gated.join(', ')} wait for approval` : '';
  // a model worker runs no tool: where tools work is the tools workers' to say
  console.log(
    `[keel] worker ${queues} at ${address}, ${role === 'model' ? 'runs no tool' : `${where}, ${how}`}${gate}`,
  );
  await worker.run();
}

main().catch((err: unknown) => {
  process.stderr.write(`[keel] ${thrownMessage(err)}\n`);
  if (process.env.KEEL_DEBUG && err instanceof Error) process.stderr.write(`${String(err.stack)}\n`);
  process.exit(1);
});
