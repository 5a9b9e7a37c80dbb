/**
 * The verbs of `agentWorkflow`, each registered once: one entry per verb, naming its signal and / or its Update and the
 * one `AgentSession` method both call (session.ts). `followUp`, `steer`, `interrupt`, `end` and `cancel` are a signal
 * (fire and forget) and an Update of the same name (validated, acknowledged; `end` and `cancel` answer once the run has
 * closed); `approve` / `deny` are Updates only; `wake` and `budgetStop` signals only. Each validator refuses a
 * malformed argument or a run that takes no more requests, with a text from common/updates.ts.
 */
import type { SignalDefinition, UpdateDefinition } from '@temporalio/common';
import { setHandler } from '@temporalio/workflow';
import { cancelReasonErrors, incomingMessageErrors, type UpdateName } from '../../common/updates.js';
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

interface Verb<Args extends any[] = any[], Ret = any> {
  signal?: { def: SignalDefinition<Args>; description: string };
  update?: {
    def: UpdateDefinition<Ret, Args>;
    description: string;
    validator(...args: Args): void;
    /** What the Update answers after the method ran (default: what the method returned). */
    answer?: () => Promise<Ret>;
  };
  /** The session's method for this verb. */
  method(...args: Args): unknown;
}

/** Registers every verb of session `s`. */
export function registerVerbs(s: AgentSession): void {
  const verbs = table(s);
  // signals first, then Updates: the order the messages buffered in a run's first workflow task were delivered in
  for (const { signal, method } of verbs)
    if (signal) setHandler(signal.def, (...args: any[]) => void method(...args), { description: signal.description });
  for (const { update, method } of verbs) {
    if (!update) continue;
    const { answer } = update;
    const handler = answer ? (...args: any[]) => (method(...args), answer()) : method;
    setHandler(update.def, handler as (...args: any[]) => any, {
      validator: update.validator,
      description: update.description,
    });
  }
}

/** Refuses a malformed argument with the errors of its check (common/updates.ts), in the client's words. */
function refuseWith(errors: string[]): void {
  if (errors.length > 0) reject(errors.join('; '));
}

function table(s: AgentSession): Verb[] {
  const refuseIfClosed = (update: UpdateName) => () => s.refuseIfClosed(update);
  return [
    {
      method: (m) => s.followUp(m),
      signal: {
        def: followUpSignal,
        description: 'Queue a user message for when the agent would stop; starts a new agent run in a waiting session.',
      },
      update: {
        def: followUpUpdate,
        validator: (m: unknown) => (s.refuseIfClosed('followUp'), refuseWith(incomingMessageErrors('followUp', m))),
        description: 'As the followUp signal, validated: answers { queued: { steering, followUp } }.',
      },
    },
    {
      method: (m) => s.steer(m),
      signal: {
        def: steerSignal,
        description: 'Queue a user message injected after the current tool batch, before the next model call.',
      },
      update: {
        def: steerUpdate,
        validator: (m: unknown) => (s.refuseIfClosed('steer'), refuseWith(incomingMessageErrors('steer', m))),
        description: 'As the steer signal, validated: answers { queued: { steering, followUp } }.',
      },
    },
    {
      method: () => s.interrupt(),
      signal: {
        def: interruptSignal,
        description: 'Abort the current agent run at the next boundary; a session then waits for input.',
      },
      update: {
        def: interruptUpdate,
        validator: refuseIfClosed('interrupt'),
        description:
          'As the interrupt signal: answers { interrupted, next } (interrupted false when no agent run was running; next: answers-queued | waits | stops).',
      },
    },
    {
      method: () => s.end(),
      signal: {
        def: endSignal,
        description: 'Finish a session once idle: the workflow completes with status completed.',
      },
      update: {
        def: endUpdate,
        validator: refuseIfClosed('end'),
        answer: () => s.whenClosed(),
        description: 'As the end signal: answers { status } once the run has closed.',
      },
    },
    {
      method: (reason?: unknown) => s.cancel(reason), // a malformed reason (a signal cannot be refused) reads `cancelled`
      signal: { def: cancelSignal, description: 'Abort the current agent run and end the workflow as Canceled.' },
      update: {
        def: cancelUpdate,
        validator: (reason?: unknown) => (s.refuseIfClosed('cancel'), refuseWith(cancelReasonErrors(reason))),
        answer: () => s.whenClosed(),
        description: 'As the cancel signal: answers { status: "cancelled" } once the run has closed.',
      },
    },
    ...(['approve', 'deny'] as const).map((name): Verb => ({
      method: (input) => (name === 'approve' ? s.approve(input) : s.deny(input)),
      update: {
        def: name === 'approve' ? approveUpdate : denyUpdate,
        validator: (input: unknown) => (s.refuseIfClosed(name), s.desk.validateDecision(name, input)),
        description: `Decide a tool call awaiting approval: { toolCallId, argsDigest, approver, reason?, token? } (token: a signed decision, required when the run verifies approvals) → the decision record.`,
      },
    })),
    {
      // the signal itself is the point: its workflow task refreshes workflowInfo(), which an idle session re-checks
      method: () => s.wake(),
      signal: {
        def: wakeSignal,
        description: 'An idle session moves to the current deployment version, if it changed.',
      },
    },
    {
      method: (text: string) => s.budgetStop(text),
      signal: {
        def: budgetStopSignal,
        description:
          'A budget above this run is spent: stop before the next model call (status stopped, error = the text).',
      },
    },
  ];
}
