/**
 * The verbs of `agentWorkflow`, each registered once: one `setHandler` per signal and per Update, calling the one
 * `AgentSession` method both share (session.ts). `followUp`, `steer`, `interrupt`, `end` and `cancel` are a signal
 * (fire and forget) and an Update of the same name (validated, acknowledged; `end` and `cancel` answer once the run has
 * closed); `approve` / `deny` are Updates only; `wake` and `budgetStop` signals only. Each validator refuses a
 * malformed argument or a run that takes no more requests, with a text from common/updates.ts.
 */
import { setHandler } from '@temporalio/workflow';
import { cancelReasonErrors, incomingMessageErrors } from '../../common/updates.js';
import {
  approveUpdate,
  budgetStopSignal,
  cancelSignal,
  cancelUpdate,
  denyUpdate,
  endSignal,
  endUpdate,
  followUpSignal,
  followUpUpdate,
  interruptSignal,
  interruptUpdate,
  steerSignal,
  steerUpdate,
  wakeSignal,
} from '../definitions.js';
import type { AgentSession } from './session.js';
import { reject } from './update-guards.js';

/** What the Temporal UI lists for each handler. */
const DESCRIBE = {
  followUp: 'Queue a user message for when the agent would stop; starts a new agent run in a waiting session.',
  followUpUpdate: 'As the followUp signal, validated: answers { queued: { steering, followUp } }.',
  steer: 'Queue a user message injected after the current tool batch, before the next model call.',
  steerUpdate: 'As the steer signal, validated: answers { queued: { steering, followUp } }.',
  interrupt: 'Abort the current agent run at the next boundary; a session then waits for input.',
  interruptUpdate:
    'As the interrupt signal: answers { interrupted, next } (interrupted false when no agent run was running; next: answers-queued | waits | stops).',
  end: 'Finish a session once idle: the workflow completes with status completed.',
  endUpdate: 'As the end signal: answers { status } once the run has closed.',
  cancel: 'Abort the current agent run and end the workflow as Canceled.',
  cancelUpdate: 'As the cancel signal: answers { status: "cancelled" } once the run has closed.',
  decide:
    'Decide a tool call awaiting approval: { toolCallId, argsDigest, approver, reason?, token? } (token: a signed decision, required when the run verifies approvals) → the decision record.',
  wake: 'An idle session moves to the current deployment version, if it changed.',
  budgetStop: 'A budget above this run is spent: stop before the next model call (status stopped, error = the text).',
} as const;

/**
 * Registers every verb of session `s`: signals first, then Updates — the order the messages buffered in a run's first
 * workflow task were delivered in. A malformed cancel reason (a signal cannot be refused) reads `cancelled`; the
 * `wake` signal itself is the point (its workflow task refreshes workflowInfo(), which an idle session re-checks).
 */
export function registerVerbs(s: AgentSession): void {
  setHandler(followUpSignal, (m) => void s.followUp(m), { description: DESCRIBE.followUp });
  setHandler(steerSignal, (m) => void s.steer(m), { description: DESCRIBE.steer });
  setHandler(interruptSignal, () => void s.interrupt(), { description: DESCRIBE.interrupt });
  setHandler(endSignal, () => s.end(), { description: DESCRIBE.end });
  setHandler(cancelSignal, (reason?: unknown) => s.cancel(reason), { description: DESCRIBE.cancel });
  setHandler(wakeSignal, () => s.wake(), { description: DESCRIBE.wake });
  setHandler(budgetStopSignal, (text) => s.budgetStop(text), { description: DESCRIBE.budgetStop });
  setHandler(followUpUpdate, (m) => s.followUp(m), {
    validator: messageValidator(s, 'followUp'),
    description: DESCRIBE.followUpUpdate,
  });
  setHandler(steerUpdate, (m) => s.steer(m), {
    validator: messageValidator(s, 'steer'),
    description: DESCRIBE.steerUpdate,
  });
  setHandler(interruptUpdate, () => s.interrupt(), {
    validator: () => s.refuseIfClosed('interrupt'),
    description: DESCRIBE.interruptUpdate,
  });
  setHandler(endUpdate, () => (s.end(), s.whenClosed()), {
    validator: () => s.refuseIfClosed('end'),
    description: DESCRIBE.endUpdate,
  });
  setHandler(cancelUpdate, (reason?: unknown) => (s.cancel(reason), s.whenClosed()), {
    validator: cancelValidator(s),
    description: DESCRIBE.cancelUpdate,
  });
  setHandler(approveUpdate, (input) => s.approve(input), {
    validator: decisionValidator(s, 'approve'),
    description: DESCRIBE.decide,
  });
  setHandler(denyUpdate, (input) => s.deny(input), {
    validator: decisionValidator(s, 'deny'),
    description: DESCRIBE.decide,
  });
}

/** Refuses a malformed argument with the errors of its check (common/updates.ts), in the client's words. */
function refuseWith(errors: string[]): void {
  if (errors.length > 0) reject(errors.join('; '));
}

/** `followUp` / `steer`: a run that takes messages, and a well-formed message (or list). */
function messageValidator(s: AgentSession, name: 'followUp' | 'steer'): (m: unknown) => void {
  return (m) => (s.refuseIfClosed(name), refuseWith(incomingMessageErrors(name, m)));
}

/** `cancel`: a run not closed yet, and a reason that is a string if given. */
function cancelValidator(s: AgentSession): (reason?: unknown) => void {
  return (reason) => (s.refuseIfClosed('cancel'), refuseWith(cancelReasonErrors(reason)));
}

/** `approve` / `deny`: a run that takes decisions, and a well-formed decision for a pending call. */
function decisionValidator(s: AgentSession, name: 'approve' | 'deny'): (input: unknown) => void {
  return (input) => (s.refuseIfClosed(name), s.desk.validateDecision(name, input));
}
