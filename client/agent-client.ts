import { Client, Connection, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { ErrorType } from '../common/errors.js';
import type { EventsPage } from '../common/events.js';
import type { Message } from '../common/messages.js';
import type { AgentRunInput, AgentRunResult, AgentRunState, IncomingMessage, MessagesPage } from '../common/run.js';
import { agentRunInputErrors } from '../common/validate-input.js';
import { cancelSignal, endSignal, eventsQuery, followUpSignal, interruptSignal, messagesQuery, stateQuery, steerSignal } from '../workflows/definitions.js';
import { keelDataConverter, type PayloadStorageOption } from '../worker/payload-storage.js';

export const AGENT_WORKFLOW_TYPE = 'agentWorkflow';

/** Thrown by `AgentClient.start` before anything is sent when the input is malformed. */
export class InvalidAgentInputError extends Error {
  constructor(readonly errors: string[]) {
    super(`Invalid AgentRunInput: ${errors.join('; ')}`);
    this.name = 'InvalidAgentInputError';
  }
}

export interface ConnectOptions {
  /** Default `$TEMPORAL_ADDRESS` or `localhost:7233`. */
  address?: string;
  namespace?: string;
  /** Default `keel`. */
  taskQueue?: string;
  /** Where offloaded payloads are read and written; must match the workers' (default `.keel/payloads`). */
  payloadStorage?: PayloadStorageOption;
}

/** Starts and finds Keel runs. */
export class AgentClient {
  constructor(
    readonly client: Client,
    readonly taskQueue = 'keel',
  ) {}

  static async connect(opts: ConnectOptions = {}): Promise<AgentClient> {
    const connection = await Connection.connect({ address: opts.address ?? process.env.TEMPORAL_ADDRESS ?? 'localhost:7233' });
    return new AgentClient(new Client({ connection, namespace: opts.namespace ?? 'default', dataConverter: keelDataConverter(opts.payloadStorage) }), opts.taskQueue ?? 'keel');
  }

  /** Validates the input (throws `InvalidAgentInputError` naming every bad field), then starts `agentWorkflow`. */
  async start(input: AgentRunInput, opts: { workflowId?: string } = {}): Promise<AgentRunHandle> {
    const errors = agentRunInputErrors(input);
    if (errors.length > 0) throw new InvalidAgentInputError(errors);
    const handle = await this.client.workflow.start(AGENT_WORKFLOW_TYPE, {
      taskQueue: this.taskQueue,
      workflowId: opts.workflowId ?? `keel-${crypto.randomUUID()}`,
      args: [input],
      staticSummary: summaryOf(input),
      staticDetails: detailsOf(input),
    });
    return new AgentRunHandle(this.client.workflow.getHandle(handle.workflowId));
  }

  /** A handle on an existing run (follows its continue-as-new chain). */
  getHandle(workflowId: string): AgentRunHandle {
    return new AgentRunHandle(this.client.workflow.getHandle(workflowId));
  }

  async close(): Promise<void> {
    await this.client.connection.close();
  }
}

/** Signals, queries and the result of one run. */
export class AgentRunHandle {
  constructor(readonly workflow: WorkflowHandle) {}

  get workflowId(): string {
    return this.workflow.workflowId;
  }

  /** Queue a message for when the agent would stop; in a waiting session it starts a new agent run. */
  followUp(message: IncomingMessage | IncomingMessage[]): Promise<void> {
    return this.workflow.signal(followUpSignal, message);
  }

  /** Queue a message injected after the current tool batch. */
  steer(message: IncomingMessage | IncomingMessage[]): Promise<void> {
    return this.workflow.signal(steerSignal, message);
  }

  /** Abort the current agent run; a session then waits for input. */
  interrupt(): Promise<void> {
    return this.workflow.signal(interruptSignal);
  }

  /** Abort the current agent run and end the workflow as Canceled. */
  cancel(reason?: string): Promise<void> {
    return this.workflow.signal(cancelSignal, reason);
  }

  /** Finish a session once idle; the workflow completes with status `completed`. */
  end(): Promise<void> {
    return this.workflow.signal(endSignal);
  }

  state(): Promise<AgentRunState> {
    return this.workflow.query(stateQuery);
  }

  messages(opts: { from?: number; limit?: number } = {}): Promise<MessagesPage> {
    return this.workflow.query(messagesQuery, opts);
  }

  /** The whole transcript, paged. */
  async allMessages(): Promise<Message[]> {
    const out: Message[] = [];
    for (;;) {
      const page = await this.messages({ from: out.length, limit: 500 });
      out.push(...page.messages);
      if (page.messages.length === 0 || out.length >= page.total) return out;
    }
  }

  events(opts: { after?: number; limit?: number } = {}): Promise<EventsPage> {
    return this.workflow.query(eventsQuery, opts);
  }

  /**
   * Waits for the end. A failed run (`AgentRunFailed`) resolves with its result (status `failed`); a cancelled run
   * resolves with status `cancelled`. Other failures (invalid input, termination) reject.
   */
  async result(): Promise<AgentRunResult> {
    try {
      return (await this.workflow.result()) as AgentRunResult;
    } catch (err) {
      if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure && err.cause.type === ErrorType.AgentRunFailed) {
        return err.cause.details?.[0] as AgentRunResult;
      }
      if (err instanceof WorkflowFailedError && (await this.workflow.describe()).status.name === 'CANCELLED') {
        const st = await this.state();
        return { status: 'cancelled', finalText: st.lastReply ?? '', newMessages: [], usage: st.usage, turns: st.turns };
      }
      throw err;
    }
  }
}

function summaryOf(input: AgentRunInput): string {
  const p = input.prompt;
  const text = typeof p === 'string' ? p : Array.isArray(p) ? (typeof p[0] === 'string' ? p[0] : JSON.stringify(p[0]?.content ?? '')) : '(continue)';
  const line = text.split('\n', 1)[0];
  return line.length > 120 ? `${line.slice(0, 119)}…` : line;
}

function detailsOf(input: AgentRunInput): string {
  const rows = [`model: ${input.model}`, `tools: ${(input.tools ?? []).join(', ') || '(none)'}`, `mode: ${input.mode ?? 'task'}`];
  if (input.metadata && Object.keys(input.metadata).length) rows.push(`metadata: ${JSON.stringify(input.metadata)}`);
  return rows.join('\n\n');
}
