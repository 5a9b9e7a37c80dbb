/**
 * Which `temporal` test files the cluster phase runs again (`npm run test:cluster`, `.ci/run`'s second phase).
 *
 * `npm test` runs every file of the `temporal` project against the dev server (one process, SQLite). A file runs a
 * second time against the real cluster (frontend, history, matching and worker as separate processes, PostgreSQL)
 * only when what it proves depends on how the server behaves — persistence, visibility, matching and versioning,
 * timers, retries and timeouts, signals and Updates between workflows, schedules, history replay — not when it proves
 * Keel's own logic in the worker, the activities or the CLI, which is the same on any server. Where several files use
 * the same server feature (Updates, child workflows, heartbeat details), the cluster runs the one that proves it, and
 * Keel's logic built on it (tree budgets and approvals, the verbs, streaming) runs on the dev server only. Every file of the project
 * is in exactly one of the two tables (test/unit/cluster-suites.test.ts), each with its reason, so a new file is
 * classified when it is added.
 */

/** Run on the dev server and again on the cluster: what the server's implementation decides. */
export const CLUSTER_SUITES: Record<string, string> = {
  'accepted-messages.test.ts': 'signals and Updates accepted while a run ends or continues-as-new',
  'approvals.test.ts': 'a waiting call across Updates, signals and the approval timer',
  'batch-cancel.test.ts': 'cancelling a batch and its abandoned children across workflows',
  'batch-retry.test.ts': 'child workflows found again by id and re-run',
  'batch-window.test.ts': 'children that outlive the batch continue-as-new and report by signal',
  'budget-crash-loop.test.ts': 'activity retries of a crashing worker',
  'cancellation.test.ts': 'workflow and activity cancellation as the server delivers it',
  'cli-list.test.ts': 'visibility queries (SQL visibility on the cluster)',
  'deployment-shared.test.ts': 'Worker Deployment versions in the matching service',
  'determinism.test.ts': 'every workflow task replayed from the history the server returns',
  'durability.test.ts': 'a worker killed mid call: activity timeouts and retries',
  'encryption.test.ts': 'sealed payloads stored and returned by the server; a clear start refused',
  'fork.test.ts':
    'queries of closed runs, memo and a visibility query on KeelForkedFrom (SQL visibility on the cluster)',
  'history.test.ts': 'history size, continue-as-new',
  'pinned-build.test.ts': 'a run pinned to a build whose workers stopped',
  'progress.test.ts': 'heartbeat details read back through describe',
  'replay-corpus.test.ts': 'every release corpus replays (the versioning gate)',
  's3-outage.test.ts': 'workflow tasks retried while the payload store is down',
  's3-payloads.test.ts': 'large payloads by reference through the server',
  'schedule.test.ts': 'Temporal Schedules and their overlap policies',
  'schedule-trigger.test.ts': 'a triggered Schedule start under each overlap policy',
  'signals.test.ts': 'signal delivery between turns',
  'smoke.test.ts': 'one run end to end',
  'sub-agents.test.ts': 'child workflows, their results and cancellation',
  'tool-queue.test.ts': "tool activities on the run's own task queue: matching across worker roles, eager dispatch",
  'updates.test.ts': 'Update acceptance, validation and results',
  'upgrade.test.ts': 'Worker Deployment Versioning across a deploy',
  'visibility.test.ts': 'search attributes and list filters (SQL visibility on the cluster)',
  'worker-affinity.test.ts': 'home task queues and schedule-to-start timeouts in matching',
};

/** Run on the dev server only: Keel's own logic, the same on any server. */
export const DEV_SERVER_SUITES: Record<string, string> = {
  'replay.test.ts': 'counterfactual replay: recorded runs again with tool results served from the record',
  'ag-ui-browser.test.ts': 'the AG-UI example in a browser',
  'model-fallback.test.ts': 'fallback models and prompt caching against the mock providers (loopback HTTP)',
  'ag-ui.test.ts': 'the AG-UI endpoint over loopback HTTP (a client of the stream and the approval Updates)',
  'any-language.test.ts': 'the run input and result as other languages send them',
  'closed-transcript.test.ts': "a closed run's transcript read from its result",
  'approvals-auth.test.ts': 'token verification inside an activity',
  'batch-grade.test.ts': 'graders and variants (activities over batch results)',
  'budget.test.ts': 'budget arithmetic of one run',
  'budget-thrown-attempts.test.ts': 'usage counted by the model activity',
  'builtin-tools.test.ts': 'the built-in tools',
  'cli-approve.test.ts': 'CLI flags',
  'cli-texts.test.ts': 'CLI wording',
  'cli.test.ts': 'the CLI end to end (the cluster phase runs its visibility part, cli-list)',
  'codec-server.test.ts': 'an HTTP codec server',
  'compaction.test.ts': 'compaction inside the loop',
  'corpus-record.test.ts': 'records a corpus only when asked (npm run record-corpus)',
  'deep-input.test.ts': 'input checks at the client',
  'demo.test.ts': 'starts its own dev server',
  'dev-server-lifeline.test.ts': 'starts its own dev server',
  'duplicate-call-ids.test.ts': 'the tool batch',
  'docs-graded.test.ts': 'starts its own keel dev',
  'examples.test.ts': 'the examples compile and run',
  'fail-fast.test.ts': 'failure classification in activities',
  'fifo-tools.test.ts': 'the file tools and FIFOs',
  'fleet-stream.test.ts': 'the fleet stream transport against a redis-server the test starts and kills',
  'hot-path.test.ts': 'promises created by the workflow code',
  'input-at-the-door.test.ts': 'input checks',
  'input.test.ts': 'input checks',
  'keel-dev.test.ts': 'starts its own dev server',
  'large-arguments.test.ts': "the model activity's streaming work and the worker's event loop",
  'local-tools.test.ts': 'local activities of the worker',
  'loop-a1.test.ts': "conformance with Pi's loop",
  'loop-a5.test.ts': "conformance with Pi's loop",
  'mcp-sandbox.test.ts': 'MCP servers in the sandbox',
  'mcp-schema.test.ts': 'MCP schema changes',
  'mcp.test.ts': 'MCP tools',
  'metrics.test.ts': "the worker's metrics endpoint",
  'one-wording.test.ts': 'message checks',
  'package.test.ts': 'npm pack and an install',
  'pi-differential.test.ts': "conformance with Pi's loop",
  'plugin.test.ts': 'the worker plugin',
  'provider-limits.test.ts': 'provider limits shared by runs, against a mock API that enforces limits',
  'provider-limits-fleet.test.ts':
    'provider limits across sub-agents and a scheduled batch, against a limiting mock API',
  'provider-limits-kill.test.ts':
    'provider limits across killed workers and their metrics, against a mock API that enforces limits',
  'provider-limits-lease.test.ts': "a worker's lease on its provider-limit grants and the limiter's reclaim timer",
  'providers.test.ts': 'pi-ai providers against mock APIs',
  'run-api.test.ts': 'the client API',
  'run-workspaces.test.ts': 'workspaces on the worker',
  'sandbox.test.ts': 'the tool sandbox',
  'sandbox-reach.test.ts': 'what a sandboxed tool process can reach',
  'secret-redaction.test.ts': 'secret hygiene of the worker',
  'session-status.test.ts': 'status texts',
  'signal-validation.test.ts': 'message checks',
  'sse-browser.test.ts': 'the SSE example in a browser',
  'tool-env.test.ts': "the tool process's environment",
  'tool-ledger.test.ts': 'the worker-local ledger',
  'tracing.test.ts': 'spans of the worker',
  'transcript-tail.test.ts': "the activities' transcript copy and what their inputs carry",
  'turn-numbers.test.ts': 'turn numbering',
  'ui-browser.test.ts': 'the Web UI in a browser',
  'worker-main-approvals.test.ts': 'worker settings from the environment',
  'worker-output.test.ts': 'what the worker prints',
  'worker-roles.test.ts': 'worker roles and their task queues',
  'budget-batch.test.ts':
    "one budget across a batch and its children: Keel's reservations over signals and Updates (updates.test.ts and batch-window.test.ts cover the server's part on the cluster)",
  'stream.test.ts':
    "the streaming call's heartbeat details (progress.test.ts reads them back through describe on the cluster)",
  'sub-agents-tools.test.ts':
    'the tool bound a child carries in its memo (sub-agents.test.ts runs child workflows on the cluster)',
  'tree-approvals.test.ts':
    "Keel's routing of approvals in a tree (approvals.test.ts and sub-agents.test.ts cover Updates, timers and children on the cluster)",
  'tree-budget.test.ts':
    "Keel's reservations in a tree (updates.test.ts and sub-agents.test.ts cover Updates and children on the cluster)",
  'typed-output.test.ts':
    "Keel's output check and repairs (durability.test.ts and history.test.ts cover killed workers and continue-as-new on the cluster)",
  'verbs.test.ts':
    "each verb's own logic (updates.test.ts and signals.test.ts cover Update and signal delivery on the cluster)",
};

/** The vitest file filters of the cluster phase: the cluster suites of `test/temporal/` and all of `test/cluster/`. */
export function clusterPhaseFilters(): string[] {
  return [...Object.keys(CLUSTER_SUITES).map((f) => `test/temporal/${f}`), 'test/cluster/'];
}
