/**
 * `keel worker`: a Keel worker (cli/start-worker.ts) against --address on --task-queue, in a role (README "Worker
 * roles"), optionally with a Prometheus endpoint; until Ctrl-C / SIGTERM.
 */
import type { Command } from 'commander';
import { approvalsFromFlags } from '../../worker/approvals/flags.js';
import { act, globals, intOption, type GlobalOptions } from '../context.js';
import { loadApprovedTools, mcpLine, quietRuntime, startWorker, toolNames } from '../start-worker.js';
import { untilSignal } from '../signals.js';
import { roleOption, workerOptions, type WorkerFlags } from '../worker-flags.js';

type WorkerCommandFlags = WorkerFlags & { metricsPort?: number; metricsHost: string };

export function register(program: Command): void {
  workerOptions(
    program
      .command('worker')
      .summary('a Keel worker (built-in tools, scripted + pi-ai models), until Ctrl-C')
      .description(
        'Runs a Keel worker against --address on --task-queue: agentWorkflow, agentBatchWorkflow and the activities, with the ' +
          'built-in tools confined to a workspace per conversation (or --workspace), their processes sandboxed, and the models scripted/* and every pi-ai provider (API keys from the ' +
          "worker's environment). Runs until Ctrl-C / SIGTERM.",
      ),
  )
    .option(
      '--metrics-port <port>',
      'serve Prometheus metrics (Temporal SDK + Keel: tokens, cost, model and tool latency) at /metrics',
      intOption('--metrics-port'),
    )
    .option('--metrics-host <host>', 'interface for --metrics-port (0.0.0.0 in a container)', '127.0.0.1')
    .option(
      '--role <role>',
      'all: everything; model: workflows and model calls on --task-queue, no tool runs here; tools: tool calls only, on ' +
        '<task-queue>-tools, no workflows or model calls: start it without provider keys (README "Worker roles")',
      roleOption,
      'all',
    )
    .action(act(runWorker));
}

/** `keel worker`: refuses bad flags before connecting, exits 3 when Temporal is down, then runs until a signal. */
async function runWorker(o: WorkerCommandFlags, cmd: Command): Promise<void> {
  const g = globals(cmd);
  await quietRuntime(o.metricsPort ? { host: o.metricsHost, port: o.metricsPort } : undefined);
  const loaded = await loadApprovedTools(o); // a bad --tools-module or --approve: exit 2 before connecting
  approvalsFromFlags(o, loaded, false); // so are approval flags that contradict, or are missing
  const { connect } = await import('../context.js');
  const probe = await connect(g); // exit 3 early when Temporal is down
  await probe.close();
  const { worker, tools, agents, mcpServers } = await startWorker(g, o, g.settings, loaded);
  const running = worker.run();
  const { describeTools } = await import('../../worker/load-modules.js');
  const described = await describeTools(o);
  const signalled = untilSignal(); // before the start line: a signal sent on seeing it is caught
  process.stdout.write(
    `[keel] worker ${queuesText(o, g)} at ${g.address}, ${described}, tools ${toolNames(tools)}${agents.length ? `, sub-agents ${agents.map((a) => a.name).join(', ')}` : ''}${mcpLine(mcpServers)}` +
      `${o.metricsPort ? `, metrics http://${o.metricsHost}:${o.metricsPort}/metrics` : ''}\n`,
  );
  const stopped = await Promise.race([signalled.then(() => 'signal' as const), running.then(() => 'ended' as const)]);
  if (stopped === 'signal') await worker.shutdown();
  await running;
}

/** The task queues of the start line, by role. */
function queuesText(o: WorkerFlags, g: GlobalOptions): string {
  return o.role === 'tools'
    ? `(role tools) on task queue ${g.taskQueue}-tools`
    : o.role === 'model'
      ? `(role model) on task queue ${g.taskQueue} (tools on ${g.taskQueue}-tools)`
      : `on task queue ${g.taskQueue}`;
}
