/**
 * One AG-UI run against a Keel conversation (thread id = the conversation's workflow id): what the request asks is
 * done (a user message is sent with `sendToConversation`, which starts the conversation's session if needed; interrupt
 * answers go to `approve` / `deny`; `cancel` / `interrupt` commands to the run), then the conversation's live stream
 * is followed from the right offset and translated until its agent run ends (RUN_FINISHED), a tool call waits for
 * approval (RUN_FINISHED with an interrupt outcome), the run fails (RUN_ERROR) or the client goes away.
 */
import { EventType, type BaseEvent, type RunAgentInput } from '@ag-ui/core';
import type { AgentClient, AgentRunHandle } from '../agent-client.js';
import type { AgentRunInput, AgentRunState } from '../../common/run.js';
import { StreamOffset, type StreamEvent } from '../../common/stream.js';
import { answerInterrupts, approvalInterrupt } from './approvals.js';
import { parseRunAgentInput, type AgUiRequest } from './input.js';
import { AgUiTranslator } from './translate.js';

/** How the endpoint runs conversations. */
export interface AgUiOptions {
  /** Connected to the workers' task queue (`AgentClient.connect({ taskQueue })`). */
  client: AgentClient;
  /**
   * The input of a thread's run, used when a thread's first message starts it (a `session`; the message is its first
   * one, so no prompt): a value, or a function of the request (e.g. to pick the model by `forwardedProps`).
   */
  runInput: Omit<AgentRunInput, 'prompt' | 'mode'> | ((input: RunAgentInput) => Omit<AgentRunInput, 'prompt' | 'mode'>);
  /** The approver an interrupt answer without `approver` or `token` names (default `ag-ui`). */
  approver?: string;
  /** How often, while a tool call runs, the endpoint asks the run whether one waits for approval (default 250 ms). */
  approvalPollMs?: number;
}

const runError = (message: string, code: string): BaseEvent =>
  ({ type: EventType.RUN_ERROR, message, code }) as BaseEvent;

/** The AG-UI events that answer request `body` (parsed JSON), until the run ends or `signal` aborts. */
export async function* agUiRun(opts: AgUiOptions, body: unknown, signal: AbortSignal): AsyncGenerator<BaseEvent> {
  const req = parseRunAgentInput(body);
  if ('error' in req) return void (yield runError(req.error, 'INVALID_INPUT'));
  const { threadId, runId } = req.input;
  const handle = opts.client.getHandle(threadId);
  let begun: { from: number; done?: boolean };
  try {
    begun = await begin(opts, req, handle);
  } catch (err) {
    return void (yield runError((err as Error).message, (err as Error).name));
  }
  yield { type: EventType.RUN_STARTED, threadId, runId } as BaseEvent;
  const state = await handle.state();
  const tr = new AgUiTranslator((n) => firstMessages(handle, n), state.usage, begun.from);
  yield tr.stamp(stateSnapshot(state));
  if (begun.done) return void (yield tr.stamp(finished(threadId, runId, 'success')));
  yield* new RunFollower(opts, handle, tr, req.input, state).follow(begun.from, signal);
}

/** Does what the request asks; answers the offset to stream from (`done`: nothing will run). */
async function begin(
  opts: AgUiOptions,
  req: AgUiRequest,
  handle: AgentRunHandle,
): Promise<{ from: number; done?: boolean }> {
  const approver = opts.approver ?? 'ag-ui';
  if (req.kind === 'reconnect') return { from: req.from! };
  const from = req.from ?? (await currentOffset(handle));
  if (req.kind === 'message') {
    const input = typeof opts.runInput === 'function' ? opts.runInput(req.input) : opts.runInput;
    await opts.client.sendToConversation(handle.workflowId, { role: 'user', content: req.text }, input);
  } else if (req.kind === 'resume') await answerInterrupts(handle, req.resume, approver);
  else if (req.command === 'cancel') await handle.cancel('cancelled through the AG-UI endpoint');
  else if (!(await handle.interrupt()).interrupted) return { from, done: true };
  return { from };
}

/** The offset after the run's last durable event (0 when no run of that id is running). */
async function currentOffset(handle: AgentRunHandle): Promise<number> {
  const running = await handle.workflow.describe().then(
    (d) => d.status.name === 'RUNNING',
    () => false,
  );
  if (!running) return 0;
  for (let after = 0; ;) {
    const page = await handle.events({ after, limit: 500 });
    if (page.events.length === 0) return StreamOffset.durable(after).value;
    after = page.lastSeq;
  }
}

async function firstMessages(handle: AgentRunHandle, n: number) {
  return (await handle.allMessages()).slice(0, n);
}

function stateSnapshot(s: AgentRunState): BaseEvent {
  const snapshot = { status: s.status, usage: s.usage, budget: s.budget ?? [], budgetEvents: [], turns: s.turns };
  return { type: EventType.STATE_SNAPSHOT, snapshot } as BaseEvent;
}

function finished(threadId: string, runId: string, outcome: 'success' | 'cancelled'): BaseEvent {
  return { type: EventType.RUN_FINISHED, threadId, runId, outcome: { type: outcome } } as BaseEvent;
}

const POLL = Symbol('poll');

/** Follows the conversation's stream for one AG-UI run, watching for approvals while tool calls run. */
class RunFollower {
  private readonly running = new Set<string>();
  private watch: boolean;

  constructor(
    private readonly opts: AgUiOptions,
    private readonly handle: AgentRunHandle,
    private readonly tr: AgUiTranslator,
    private readonly input: RunAgentInput,
    state: AgentRunState,
  ) {
    this.watch = state.pendingApprovals.length > 0 || state.runningTools.length > 0;
  }

  async *follow(from: number, signal: AbortSignal): AsyncGenerator<BaseEvent> {
    const gone = new AbortController();
    const stop = () => gone.abort();
    signal.addEventListener('abort', stop);
    const it = this.handle.stream({ from, signal: gone.signal })[Symbol.asyncIterator]();
    try {
      let next = it.next();
      for (;;) {
        const r = await this.nextOrPoll(next);
        if (r === POLL) {
          const pending = (await this.handle.state()).pendingApprovals;
          if (pending.length) return void (yield this.interrupted(pending.map(approvalInterrupt)));
          continue;
        }
        if (r.done) return yield* this.closed();
        for (const ev of await this.tr.events(r.value)) yield ev;
        if (r.value.type === 'agent_end') return yield* this.agentEnded(r.value.reason);
        this.track(r.value);
        next = it.next();
      }
    } finally {
      signal.removeEventListener('abort', stop);
      gone.abort();
    }
  }

  private nextOrPoll(next: Promise<IteratorResult<StreamEvent>>): Promise<IteratorResult<StreamEvent> | typeof POLL> {
    if (!this.watch && this.running.size === 0) return next;
    const ms = this.opts.approvalPollMs ?? 250;
    return Promise.race([next, new Promise<typeof POLL>((r) => setTimeout(() => r(POLL), ms).unref())]);
  }

  private track(e: StreamEvent): void {
    if (e.type === 'tool_execution_start') this.running.add(e.toolCallId);
    else if (e.type === 'tool_execution_end') this.running.delete(e.toolCallId);
    else if (e.type === 'turn_end') this.watch = false;
  }

  private interrupted(interrupts: ReturnType<typeof approvalInterrupt>[]): BaseEvent {
    const { threadId, runId } = this.input;
    return this.tr.stamp({
      type: EventType.RUN_FINISHED,
      threadId,
      runId,
      outcome: { type: 'interrupt', interrupts },
    } as BaseEvent);
  }

  private async *agentEnded(reason: 'interrupted' | 'cancelled' | undefined): AsyncGenerator<BaseEvent> {
    yield this.tr.stamp(stateSnapshot(await this.handle.state()));
    yield this.tr.stamp(finished(this.input.threadId, this.input.runId, reason ? 'cancelled' : 'success'));
  }

  /** The run closed without an agent run's end (failed, cancelled, terminated). */
  private async *closed(): AsyncGenerator<BaseEvent> {
    const status = await this.handle.workflow.describe().then(
      (d) => d.status.name,
      () => 'UNKNOWN',
    );
    if (status === 'CANCELLED')
      return void (yield this.tr.stamp(finished(this.input.threadId, this.input.runId, 'cancelled')));
    if (status === 'COMPLETED')
      return void (yield this.tr.stamp(finished(this.input.threadId, this.input.runId, 'success')));
    const lastError = await this.handle.state().then(
      (s) => s.lastError,
      () => undefined,
    );
    yield this.tr.stamp(runError(lastError ?? `the run ended ${status.toLowerCase()}`, `RUN_${status}`));
  }
}
