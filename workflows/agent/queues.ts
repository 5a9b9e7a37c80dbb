import type { QueueMode } from '../../common/run.js';
import type { UserMessage } from '../../common/messages.js';
import type { RunConfig } from './state.js';

/** A session's two queues (carried state) and the modes they are drained in. */
export interface SessionQueues {
  steering: UserMessage[];
  followUps: UserMessage[];
  config: Pick<RunConfig, 'steeringMode' | 'followUpMode'>;
}

/** Messages are waiting in either queue. */
export function hasQueued(q: SessionQueues): boolean {
  return q.steering.length > 0 || q.followUps.length > 0;
}

/** Drains the steering or follow-up queue per the run's queue mode. */
export function drainQueue(q: SessionQueues, from: 'steering' | 'followUp'): UserMessage[] {
  const queue = from === 'steering' ? q.steering : q.followUps;
  return drain(queue, (from === 'steering' ? q.config.steeringMode : q.config.followUpMode) ?? 'one-at-a-time');
}

/** Pi's `Agent.continue()` from an assistant tail: steering first (initial steering poll suppressed), else follow-ups. */
export function nextStart(q: SessionQueues): { prompts: UserMessage[]; suppressSteeringPoll?: true } {
  if (q.steering.length > 0) return { prompts: drainQueue(q, 'steering'), suppressSteeringPoll: true };
  return { prompts: drainQueue(q, 'followUp') };
}

/** Drain per Pi's queue modes: `all` takes everything queued, `one-at-a-time` only the oldest. */
export function drain(queue: UserMessage[], mode: QueueMode): UserMessage[] {
  if (queue.length === 0) return [];
  return mode === 'all' ? queue.splice(0, queue.length) : queue.splice(0, 1);
}

/** Put drained-but-not-emitted messages back at the front (Pi LATEST (g)): nothing queued is lost to an abort. */
export function restore(queue: UserMessage[], messages: UserMessage[]): void {
  queue.unshift(...messages);
}

/** Queues received messages (signal or Update) and counts them, so a waiting session wakes up. */
export function enqueue(
  state: { steering: UserMessage[]; followUps: UserMessage[]; received: number },
  queue: 'steering' | 'followUp',
  messages: UserMessage[],
): void {
  (queue === 'steering' ? state.steering : state.followUps).push(...messages);
  state.received += messages.length;
}
