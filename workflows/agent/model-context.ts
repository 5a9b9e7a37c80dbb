/** What a model step and a compaction need of the session; `AgentSession` (session.ts) implements it. A leaf type. */
import type { AgentEvent } from '../../common/events.js';
import type { Message } from '../../common/messages.js';
import type { RunRef } from '../../common/wire.js';
import type { RunBudget } from './budget.js';
import type { AbortKind, SessionState } from './state.js';
import type { Priority } from '../../common/limits/definition.js';

/**
 * What a model step needs of the session (Pi's `context`, `signal` and `emit`): the state it reads and counts usage in,
 * the run's identity and transcript digests, the abort, and how to append, log, run an activity cancellably and show a
 * running model call.
 */
export interface ModelContext {
  readonly state: SessionState;
  readonly run: RunRef;
  /** `digests[i]`: digest of transcript[0, i), sent with activity inputs (common/transcript-digest.ts). */
  readonly digests: number[];
  readonly abort?: AbortKind;
  /** The run's budget: checked before each request, spent after it. */
  readonly budget: RunBudget;
  /** The run's event log: its last sequence number (a model call is relayed after it, stream-relay.ts). */
  readonly events: { readonly seq: number };
  /** Logs an agent event. */
  readonly emit: (event: AgentEvent) => void;
  /** Appends a message to the transcript; returns its index. */
  append(message: Message): number;
  /** Runs `fn` (which schedules an activity) in the session's activity scope, so an abort reaches it. */
  runCancellable<T>(fn: () => Promise<T>): Promise<T>;
  /** A model call started at `since` (workflow time) or, undefined, ended: the details say so. */
  modelCalling(since: number | undefined): void;
  /** The `priority` field of the run's model activities under provider limits (workflows/limits/run-wait.ts). */
  providerPriority(): { priority?: Priority };
}
