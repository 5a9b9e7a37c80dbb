/**
 * `keel send` (follow-up), `keel steer`, `keel interrupt`, `keel cancel`, `keel end`: the Updates of a run, each
 * printing the run's acknowledgement (a refusal is a usage error with the run's own words).
 */
import type { Command } from 'commander';
import type { AgentClient, AgentRunHandle } from '../../client/agent-client.js';
import { act, EXIT, globals, printJson, uiLink, usageError, withClient, type GlobalOptions } from '../context.js';
import { followRun } from '../run/follow.js';
import { refuseStranded } from '../run/pinned.js';
import { exitCodeOf, closedRunOutcome, temporalStatus } from '../outcome.js';
import { RunRenderer, stdoutSink, summaryFromResult } from '../render.js';
import { eventsQuery } from '../../workflows/definitions.js';
import { BATCH_WORKFLOW_TYPE, progressQuery, type BatchProgress } from '../../common/batch-definitions.js';
import type { ClosedAck, InterruptAck, QueuedAck } from '../../common/updates.js';

/** The run's handle, after checking it exists and is still running (a signal to a closed run is a usage error). */
async function runningHandle(client: AgentClient, id: string, g: GlobalOptions): Promise<AgentRunHandle> {
  const handle = client.getHandle(id);
  const d = await handle.workflow.describe(); // WorkflowNotFoundError → exit 2
  if (d.status.name !== 'RUNNING') throw usageError(`Run ${id} is ${temporalStatus(d)}; it takes no more signals.`);
  await refuseStranded(client, g, d); // pinned to a build nobody serves: the Update would wait unanswered
  return handle;
}

async function followAfterSignal(handle: AgentRunHandle, g: GlobalOptions, after: number): Promise<number> {
  const r = new RunRenderer(stdoutSink());
  const url = uiLink(g, handle.workflowId);
  const end = await followRun(handle.workflow, r, { after, stopWhenWaiting: true });
  if (end.closed) {
    const out = await closedRunOutcome(handle.workflow);
    r.summary({ ...summaryFromResult(handle.workflowId, out.result, url), status: out.status });
    return exitCodeOf(out.status);
  }
  if (end.state)
    r.summary({
      workflowId: handle.workflowId,
      status: end.state.status,
      turns: end.state.turns,
      usage: end.state.usage,
      url,
    });
  return EXIT.ok;
}

/** `followUp → <id>: queued 0 steering, 1 follow-up` (or `(cancelled)` for a final status), then the UI link. */
function report(
  g: GlobalOptions,
  id: string,
  what: string,
  ack: QueuedAck | InterruptAck | ClosedAck,
  extra: Record<string, unknown> = {},
): void {
  const url = uiLink(g, id);
  if (g.json) printJson({ workflowId: id, update: what, ack, url, ...extra });
  else process.stdout.write(`${what} → ${id}${ackText(ack)}\n${url}\n`);
}

/** What the run does after an interrupt (the workflow's answer `next`). */
const NEXT: Record<string, string> = {
  'answers-queued': '; it answers the queued messages next',
  waits: '; the session waits for input',
  stops: '; the run stops',
};

function ackText(ack: QueuedAck | InterruptAck | ClosedAck): string {
  if ('queued' in ack) return `: queued ${ack.queued.steering} steering, ${ack.queued.followUp} follow-up`;
  if ('interrupted' in ack)
    return ack.interrupted ? `: interrupted${NEXT[ack.next ?? ''] ?? ''}` : ': nothing was running';
  return ` (${ack.status})`;
}

/**
 * `keel cancel <batchId>`: what `temporal workflow cancel` does to a batch (it has no `cancel` Update): the batch closes
 * Canceled, asks its running tasks to cancel, keeps the finished ones and starts no queued one. Waits for the batch to
 * close and says what happened, counted by its `progress` query just before the cancellation request.
 */
async function cancelBatch(client: AgentClient, g: GlobalOptions, id: string): Promise<void> {
  const handle = client.client.workflow.getHandle(id);
  const p: BatchProgress | undefined = await handle.query(progressQuery).catch(() => undefined);
  await handle.cancel();
  await handle.result().catch(() => undefined); // closes Canceled once it has asked its running tasks to cancel
  const status = temporalStatus(await handle.describe());
  const url = uiLink(g, id);
  if (g.json) {
    printJson({
      workflowId: id,
      cancelled: 'batch',
      status,
      ...(p ? { tasks: { cancelled: p.running, finished: p.done + p.failed, notStarted: p.queued } } : {}),
      url,
    });
    return;
  }
  const tasks = p
    ? `: ${p.running} running task(s) cancelled, ${p.done + p.failed} finished kept, ${p.queued} not started`
    : '';
  process.stdout.write(`cancel → batch ${id} (${status})${tasks}\n${url}\n`);
}

export function register(program: Command): void {
  for (const [name, signal, summary] of [
    ['send', 'followUp', 'queue a follow-up message (Pi followUp); a waiting session starts a new agent run'],
    ['steer', 'steer', 'queue a steering message, injected after the current tool batch'],
  ] as const)
    registerMessage(program, name, signal, summary);
  registerInterrupt(program);
  registerCancel(program);
  registerEnd(program);
}

/** `keel send` or `keel steer` (`signal`: the Update that queues the message). */
function registerMessage(program: Command, name: string, signal: 'followUp' | 'steer', summary: string): void {
  program
    .command(name)
    .summary(summary)
    .argument('<workflowId>', 'the run')
    .argument('<message...>', 'the message text')
    .option('-f, --follow', 'then follow the run live until the agent stops (or the run ends)')
    .action(
      act((id: string, words: string[], o: { follow?: boolean }, cmd: Command) =>
        sendMessage(signal, id, words, o, cmd),
      ),
    );
}

/** `keel send` / `keel steer`'s action: queue the message, print the run's acknowledgement, follow it with -f. */
async function sendMessage(
  signal: 'followUp' | 'steer',
  id: string,
  words: string[],
  o: { follow?: boolean },
  cmd: Command,
): Promise<number> {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    const handle = await runningHandle(client, id, g);
    const text = words.join(' ');
    const after = o.follow
      ? ((await handle.workflow.query(eventsQuery, { after: 0, limit: 1 }).catch(() => undefined))?.lastSeq ?? 0)
      : 0;
    const ack = signal === 'followUp' ? await handle.followUp(text) : await handle.steer(text);
    report(g, id, signal, ack, { message: text });
    return o.follow && !g.json ? followAfterSignal(handle, g, after) : EXIT.ok;
  });
}

/** `keel interrupt`. */
function registerInterrupt(program: Command): void {
  program
    .command('interrupt')
    .summary('abort the current agent run; a session then waits for input, a task ends stopped')
    .argument('<workflowId>', 'the run')
    .action(act(interruptRun));
}

/** `keel interrupt`'s action. */
async function interruptRun(id: string, _o: unknown, cmd: Command): Promise<void> {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    report(g, id, 'interrupt', await (await runningHandle(client, id, g)).interrupt());
  });
}

/** `keel cancel`. */
function registerCancel(program: Command): void {
  program
    .command('cancel')
    .summary('abort the run (or a batch: its running tasks) and end it as Canceled')
    .argument('<workflowId>', 'the run, or a batch id (`keel batch`)')
    .option('--reason <text>', 'why (recorded in the run; not for a batch)')
    .option('--wait', 'also wait until Temporal has closed the run')
    .action(act(cancelRunOrBatch));
}

/** `keel cancel`'s action: a batch is cancelled as Temporal does it, a run through its `cancel` Update. */
async function cancelRunOrBatch(id: string, o: { reason?: string; wait?: boolean }, cmd: Command): Promise<void> {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    const d = await client.getHandle(id).workflow.describe(); // WorkflowNotFoundError → exit 2
    if (d.type === BATCH_WORKFLOW_TYPE) {
      if (d.status.name !== 'RUNNING') throw usageError(`Batch ${id} is ${temporalStatus(d)}; it cannot be cancelled.`);
      if (o.reason !== undefined) throw usageError('--reason is recorded by runs, not by a batch: cancel it without.');
      return cancelBatch(client, g, id);
    }
    const handle = await runningHandle(client, id, g);
    const ack = await handle.cancel(o.reason); // answers once the run's status is final
    if (o.wait) await closedRunOutcome(handle.workflow);
    report(g, id, 'cancel', ack);
  });
}

/** `keel end`. */
function registerEnd(program: Command): void {
  program
    .command('end')
    .summary('finish a session once idle; prints the final status once the run has closed')
    .argument('<workflowId>', 'the run')
    .action(act(endSession));
}

/** `keel end`'s action. */
async function endSession(id: string, _o: unknown, cmd: Command): Promise<void> {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    report(g, id, 'end', await (await runningHandle(client, id, g)).end());
  });
}
