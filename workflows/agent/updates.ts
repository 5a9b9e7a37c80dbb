/**
 * The Updates of `agentWorkflow` (`followUp`, `steer`, `interrupt`, `end`, `cancel`; `approve` / `deny` live in
 * approvals.ts). Each validator refuses a malformed argument or a run that takes no more requests, with a text from
 * common/updates.ts; each handler does what the signal of the same name does and answers what happened.
 * Also the drain before the workflow closes or continues-as-new (`allHandlersFinished`).
 */
import { allHandlersFinished, CancellationScope, condition, patched, setHandler } from '@temporalio/workflow';
import type { AgentRunInput, IncomingMessage } from '../../common/run.js';
import { incomingMessageErrors, type ClosedAck, type InterruptAck, type QueuedAck } from '../../common/updates.js';
import { cancelUpdate, endUpdate, followUpUpdate, interruptUpdate, steerUpdate } from '../definitions.js';
import { toUserMessages } from './incoming.js';
import { enqueue } from './queues.js';
import { abortSession, agentRunning, type Session } from './session.js';
import { registerApprovalUpdates } from './approvals.js';
import { isFinal, refuseIfClosed, reject } from './update-guards.js';
import { PATCH } from '../patches.js';

export function registerUpdates(s: Session): void {
  if (s.state.endRequested) s.endRequested = true; // carried across continue-as-new
  for (const [def, queue, update] of [
    [followUpUpdate, 'followUp', 'followUp'],
    [steerUpdate, 'steering', 'steer'],
  ] as const) {
    setHandler(
      def,
      (m: IncomingMessage | IncomingMessage[]): QueuedAck => {
        enqueue(s.state, queue, toUserMessages(m));
        return { queued: { steering: s.state.steering.length, followUp: s.state.followUps.length } };
      },
      {
        validator: (m: unknown) => {
          refuseIfClosed(s, update);
          const errors = incomingMessageErrors(update, m);
          if (errors.length > 0) reject(errors.join('; '));
        },
        description: `As the ${update} signal, validated: answers { queued: { steering, followUp } }.`,
      },
    );
  }
  setHandler(
    interruptUpdate,
    () => {
      const interrupted = agentRunning(s);
      if (!interrupted) return { interrupted };
      abortSession(s, 'interrupt');
      return { interrupted, next: afterInterrupt(s) };
    },
    {
      validator: () => refuseIfClosed(s, 'interrupt'),
      description:
        'As the interrupt signal: answers { interrupted, next } (interrupted false when no agent run was running; next: answers-queued | waits | stops).',
    },
  );
  setHandler(
    endUpdate,
    async () => {
      s.endRequested = true;
      return closed(s);
    },
    {
      validator: () => refuseIfClosed(s, 'end'),
      description: 'As the end signal: answers { status } once the run has closed.',
    },
  );
  setHandler(
    cancelUpdate,
    async (reason?: string) => {
      if (s.abort !== 'cancel') s.cancelReason = reason ?? 'cancelled';
      abortSession(s, 'cancel');
      return closed(s);
    },
    {
      validator: (reason?: unknown) => {
        refuseIfClosed(s, 'cancel');
        if (reason !== undefined && reason !== null && typeof reason !== 'string')
          reject(`cancel: the reason must be text, got ${JSON.stringify(reason)}`);
      },
      description: 'As the cancel signal: answers { status: "cancelled" } once the run has closed.',
    },
  );
  registerApprovalUpdates(s);
}

/** What an interrupted run does next (workflows/agent/workflow.ts, after its agent run ends aborted). */
function afterInterrupt(s: Session): NonNullable<InterruptAck['next']> {
  const st = s.state;
  if ((st.config.mode ?? 'task') === 'task') return 'stops';
  if (st.steering.length + st.followUps.length > 0) return 'answers-queued';
  return s.endRequested ? 'stops' : 'waits';
}

/** Waits until the run has its final status (or continues-as-new first). */
async function closed(s: Session): Promise<ClosedAck> {
  await condition(() => (s.closed === true && isFinal(s.state.status)) || s.continuing === true);
  const status = s.state.status;
  return s.closed && isFinal(status) ? { status } : { status, continuedAsNew: true };
}

/**
 * Before the workflow completes, fails or is cancelled: lets running Update handlers answer (an `end` waiting for the
 * final status answers now). No command: with no handler running (every 0.1.0 history) the condition holds at once.
 */
export async function beforeClose(): Promise<void> {
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
}

/** Before continue-as-new: carries an `end` request, and lets waiting handlers answer `{ continuedAsNew: true }`. */
export async function beforeContinueAsNew(s: Session): Promise<void> {
  s.continuing = true;
  if (s.endRequested) s.state.endRequested = true;
  await CancellationScope.nonCancellable(() => condition(allHandlersFinished));
}

/**
 * A session started with neither `prompt` nor `messages` waits for its first message instead of failing (so a service
 * can create a conversation with update-with-start: its `followUp` is the first message). Behind
 * `patched(PATCH.sessionAwaitsFirstMessage)`: 0.1.0 failed such a run with `InvalidAgentInput`.
 */
export function awaitsFirstMessage(s: Session, input: AgentRunInput): boolean {
  const empty = input.prompt === undefined && s.state.transcript.length === 0 && (input.mode ?? 'task') === 'session';
  return empty && patched(PATCH.sessionAwaitsFirstMessage);
}
