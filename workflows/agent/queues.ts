import type { QueueMode } from '../../common/run.js';
import type { UserMessage } from '../../common/messages.js';

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
