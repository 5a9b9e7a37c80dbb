/** `keel status`, `keel watch`, `keel transcript`: reading a run. */
import { cacheUsageText } from '../../common/cache-usage.js';
import { ChildFollower } from '../run/children.js';
import { childWorkflowId } from '../../common/tree/sub-agents.js';
import { refuseStranded } from '../run/pinned.js';
import { Option, type Command } from 'commander';
import type { LoggedEvent } from '../../common/events.js';
import type { Message } from '../../common/messages.js';
import type { AgentRunState, MessagesPage } from '../../common/run.js';
import { messagesQuery } from '../../workflows/definitions.js';
import type { AgentClient } from '../../client/agent-client.js';
import { readTranscript, type PageReader } from '../../client/read-transcript.js';
import { act, CliError, EXIT, globals, printJson, uiLink, withClient, type GlobalOptions } from '../context.js';
import { followRun } from '../run/follow.js';
import { exitCodeOf, closedRunOutcome, temporalStatus, tryState, withDeadline, type Outcome } from '../outcome.js';
import { throughOutage } from '../../client/reconnect.js';
import {
  formatCost,
  formatDuration,
  formatTokens,
  terminalLine,
  paint,
  RunRenderer,
  stdoutSink,
  summaryFromResult,
  transcriptMarkdown,
} from '../render.js';
import { BATCH_WORKFLOW_TYPE, printBatchStatus } from './batch.js';
import { awaitsToolActivity, toolQueueWatch, warnIfNoToolWorker } from '../run/tool-queue.js';
import { watchProviderWait } from '../run/provider-wait.js';
import { stopFollowingOn } from '../signals.js';
import { terminalSafe } from '../terminal-text.js';
import { forkLine, forkMemoOf } from '../../common/fork.js';

export interface StatusReport {
  workflowId: string;
  runId: string;
  url: string;
  workflowType: string;
  taskQueue: string;
  /** Temporal's view: running, completed, failed, cancelled, terminated, timed_out. */
  temporalStatus: string;
  /** Keel's view: starting, running, waiting, completed, stopped, failed, cancelled (terminated / timed_out when Temporal ended it). */
  status: string;
  startTime: string;
  closeTime?: string;
  durationMs?: number;
  state?: AgentRunState;
  result?: Omit<Outcome['result'], 'newMessages'> & { newMessageCount: number };
  failureType?: string;
  /** A fork: `forked from <id> at turn N` (docs/runs.md#fork-and-rewind). */
  forkedFrom?: string;
}

export async function statusOf(client: AgentClient, g: GlobalOptions, id: string): Promise<StatusReport> {
  const handle = client.getHandle(id).workflow;
  const d = await handle.describe();
  const tStatus = temporalStatus(d);
  const fork = forkMemoOf(d.memo);
  const report: StatusReport = {
    workflowId: id,
    runId: d.runId,
    url: uiLink(g, id),
    workflowType: d.type,
    taskQueue: d.taskQueue,
    temporalStatus: tStatus,
    status: tStatus,
    startTime: d.startTime.toISOString(),
    ...(fork ? { forkedFrom: forkLine(fork) } : {}),
    ...(d.closeTime
      ? { closeTime: d.closeTime.toISOString(), durationMs: d.closeTime.getTime() - d.startTime.getTime() }
      : {}),
  };
  if (tStatus === 'running') {
    const st = await tryState(handle, 5000);
    if (st) {
      report.state = st;
      report.status = st.status;
    }
    return report;
  }
  const out = await closedRunOutcome(handle, { stateTimeoutMs: 2000 });
  const { newMessages, ...rest } = out.result;
  report.status = out.status;
  report.result = { ...rest, newMessageCount: newMessages.length };
  if (out.failureType) report.failureType = out.failureType;
  const st = await tryState(handle, 2000);
  if (st) report.state = st;
  return report;
}

function printStatus(r: StatusReport): void {
  const sink = stdoutSink();
  const ok = !['failed', 'cancelled', 'terminated', 'timed_out'].includes(r.status);
  const lines = [
    `${paint(sink, 'bold', r.workflowId)}  ${paint(sink, ok ? 'green' : 'red', r.status)}${r.status !== r.temporalStatus ? paint(sink, 'dim', ` (Temporal: ${r.temporalStatus})`) : ''}`,
  ];
  const st = r.state;
  const usage = r.result?.usage ?? st?.usage;
  const turns = r.result?.turns ?? st?.turns;
  const facts = [
    st ? `model ${st.model}` : undefined,
    st ? `mode ${st.mode}` : undefined,
    // during a turn: its number, as run/watch and the details show it
    !r.result && st?.turn !== undefined
      ? `turn ${st.turn} in progress`
      : turns !== undefined
        ? `${turns} turn${turns === 1 ? '' : 's'}`
        : undefined,
    st ? `${st.runs} agent run${st.runs === 1 ? '' : 's'}` : undefined,
    st ? `${st.messageCount} messages` : undefined,
    st?.continuedAsNew ? `continued-as-new ${st.continuedAsNew}×` : undefined,
  ].filter(Boolean);
  if (facts.length) lines.push(facts.join(' · '));
  if (usage)
    lines.push(
      `usage: ${formatTokens(usage.totalTokens)} tokens (${formatTokens(usage.input)} in, ${formatTokens(usage.output)} out) · ${formatCost(usage.cost.total)}`,
    );
  const cache = usage && cacheUsageText(usage);
  if (cache) lines.push(cache);
  if (st?.fallback) lines.push(`model fallback: ${st.fallback}`);
  if (st && (st.queued.steering || st.queued.followUp))
    lines.push(`queued: ${st.queued.steering} steering, ${st.queued.followUp} follow-up`);
  if (st?.runningTools.length) lines.push(`running tools: ${st.runningTools.map((t) => t.toolName).join(', ')}`);
  const reply = r.result?.finalText || st?.lastReply;
  if (reply) lines.push(`last reply: ${terminalLine(reply, sink.width - 12)}`);
  const error = r.result?.error ?? st?.lastError;
  if (error) lines.push(paint(sink, 'red', `error: ${terminalSafe(error)}`));
  if (r.forkedFrom) lines.push(r.forkedFrom);
  lines.push(
    `started ${r.startTime}${r.closeTime ? ` · closed ${r.closeTime} · ${formatDuration(r.durationMs ?? 0)}` : ''} · task queue ${r.taskQueue}`,
  );
  lines.push(`Temporal UI: ${r.url}`);
  sink.write(`${lines.join('\n')}\n`);
}

/**
 * Every message of the run: a closed run's from its result (client/read-transcript.ts), else the `messages` query
 * (paged, each page within 10 s); for a closed run whose result lacks them and no worker answers, the result's
 * newMessages (not complete).
 */
export async function transcriptOf(
  client: AgentClient,
  id: string,
): Promise<{ messages: Message[]; complete: boolean }> {
  const handle = client.getHandle(id).workflow;
  try {
    const page: PageReader = (h, from, limit) => withDeadline(h, 10_000, () => h.query(messagesQuery, { from, limit }));
    return { messages: await readTranscript(handle, undefined, page), complete: true };
  } catch (err) {
    const d = await handle.describe();
    if (d.status.name === 'RUNNING')
      throw new CliError(
        EXIT.runFailed,
        `Could not read the transcript of ${id}: ${(err as Error).message} (is a worker running on task queue ${d.taskQueue}?)`,
      );
    const outcome = await closedRunOutcome(handle, { stateTimeoutMs: 1000 });
    return { messages: outcome.result.newMessages, complete: false };
  }
}

export function register(program: Command): void {
  program
    .command('status')
    .summary("a run's status, turns, usage, queues and last reply (a batch's progress)")
    .description(
      "Prints the run's status. Exit code: 0 running/waiting/completed/stopped, 1 failed (also an open session whose last agent run failed)/cancelled/terminated.",
    )
    .argument('<workflowId>', 'the run (or batch)')
    .action(act(showStatus));

  program
    .command('watch')
    .summary('follow a run live until it ends (Ctrl-C to stop watching)')
    .argument('<workflowId>', 'the run')
    .option('--tail', 'only what happens from now on (default: from the beginning)')
    .action(act(watchRun));

  program
    .command('transcript')
    .summary("the run's messages as Markdown or JSON (Pi message format)")
    .argument('<workflowId>', 'the run')
    .addOption(new Option('--format <format>', 'md or json').choices(['md', 'json']).default('md'))
    .option(
      '--child <toolCallId>',
      'the transcript of the sub-agent the run started for this tool call (README "Sub-agents"); repeat it to go down the tree: --child call_1 --child call_2',
      (value: string, previous: string[] = []) => [...previous, value],
    )
    .action(act(printTranscript));
}

/** `keel status`: the run's (or batch's) status; exits 1 for a failed run. */
async function showStatus(id: string, _o: unknown, cmd: Command) {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    const d = await client.getHandle(id).workflow.describe();
    if (d.type === BATCH_WORKFLOW_TYPE) return printBatchStatus(client, g, id);
    await refuseStranded(client, g, d); // its queries would fail with no word of why
    const r = await statusOf(client, g, id);
    if (g.json) printJson(r);
    else printStatus(r);
    // a tool call in progress that no worker can take (roles split, the tools worker stopped)
    if (r.temporalStatus === 'running' && awaitsToolActivity(d)) await warnIfNoToolWorker(client, g, r.taskQueue);
    if (r.temporalStatus === 'running') return r.status === 'failed' ? EXIT.runFailed : EXIT.ok; // an idle session after a model error
    return exitCodeOf(r.status);
  });
}

/** `keel watch`: follows the run (and its sub-agents) live to its end; 130 when Ctrl-C stops watching. */
async function watchRun(id: string, o: { tail?: boolean }, cmd: Command) {
  const g = globals(cmd);
  return withClient(g, async (client) => {
    const handle = client.getHandle(id);
    const d = await handle.workflow.describe();
    const url = uiLink(g, id);
    const sink = stdoutSink();
    const r = new RunRenderer(g.json ? { ...sink, write: () => undefined } : sink);
    const abort = stopFollowingOn(['SIGINT']); // before the header: a Ctrl-C sent on seeing it is caught
    if (!g.json) r.header(id, url, temporalStatus(d));
    let after = 0;
    if (o.tail) after = (await handle.events({ after: 0, limit: 1 }).catch(() => undefined))?.lastSeq ?? 0;
    // sub-agents' runs nested under their calls (children.ts)
    const children = g.json ? undefined : new ChildFollower((c) => client.getHandle(c).workflow, sink, abort.signal);
    // a running run's tool call that no worker can take: said once, at its first tool call seen
    const toolQueue = d.status.name === 'RUNNING' ? toolQueueWatch(client, g, d.taskQueue) : undefined;
    // a model request waiting for its provider limits: the details' wait line, as it changes
    const stopWait =
      !g.json && d.status.name === 'RUNNING' ? watchProviderWait(handle.workflow, sink.write) : undefined;
    try {
      const end = await followRun(handle.workflow, r, {
        after,
        signal: abort.signal,
        onEvent: (e: LoggedEvent) => {
          toolQueue?.(e);
          if (g.json) process.stdout.write(`${JSON.stringify(e)}\n`);
          else children?.onEvent(e);
        },
      });
      await children?.done();
      if (!end.closed) return 130;
      const out = await throughOutage(() => closedRunOutcome(handle.workflow));
      const d2 = await throughOutage(() => handle.workflow.describe());
      const durationMs = d2.closeTime ? d2.closeTime.getTime() - d2.startTime.getTime() : undefined;
      const summary = { ...summaryFromResult(id, out.result, url, durationMs), status: out.status };
      if (g.json) process.stdout.write(`${JSON.stringify({ type: 'summary', ...summary })}\n`);
      else r.summary(summary);
      return exitCodeOf(out.status);
    } finally {
      stopWait?.();
      abort.dispose();
    }
  });
}

/** `keel transcript`: the run's (or a sub-agent's, --child) messages as Markdown or JSON. */
async function printTranscript(root: string, o: { format: 'md' | 'json'; child?: string[] }, cmd: Command) {
  const g = globals(cmd);
  const id = (o.child ?? []).reduce(childWorkflowId, root);
  return withClient(g, async (client) => {
    const { messages, complete } = await transcriptOf(client, id);
    if (!complete)
      process.stderr.write(
        `[keel] no worker answered the messages query; showing this run's new messages from its result\n`,
      );
    if (o.format === 'json' || g.json) process.stdout.write(`${JSON.stringify(messages, null, 2)}\n`);
    else
      process.stdout.write(`${terminalSafe(transcriptMarkdown(messages, `Run ${id}`))}\n<!-- ${uiLink(g, id)} -->\n`);
    if (o.format !== 'json' && !g.json) return;
    process.stderr.write(`${uiLink(g, id)}\n`);
  });
}
