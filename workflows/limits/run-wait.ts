/**
 * A run's side of provider limits (docs/provider-limits.md): its model activity tells it, by the `keelProviderWait`
 * signal, that its request waits for a key's limits (`{ text }`: `waiting for anthropic tokens/min: 98,000 of 100,000
 * in use`) and when it waits no more (`{}`); the run's current details show the line meanwhile. Registering the
 * handler and setting the details issue no command; only runs whose worker has provider limits receive the signal.
 * And which priority its model requests ask with (absent: an interactive run's default, 2).
 */
import { defineSignal, setHandler } from '@temporalio/workflow';
import { asPriority, BATCH_PRIORITY, type Priority } from '../../common/limits/definition.js';
import { PROVIDER_WAIT_SIGNAL } from '../../common/limits/protocol.js';

export const providerWaitSignal = defineSignal<[{ text?: string }]>(PROVIDER_WAIT_SIGNAL);

/** What a run shows of its provider wait. */
export interface WaitHolder {
  providerWait?: string;
  publishDetails(): void;
}

export function registerProviderWait(s: WaitHolder): void {
  setHandler(
    providerWaitSignal,
    (w) => {
      s.providerWait = typeof w?.text === 'string' && w.text ? w.text.slice(0, 300) : undefined;
      s.publishDetails();
    },
    { description: "From the run's model activity: it waits for its provider limits ({ text }), or no more ({})." },
  );
}

/** The priority field of a model activity's input: the run's own, else a batch task's default, else none. */
export function priorityField(priority: unknown, batchTask: boolean): { priority?: Priority } {
  const p = asPriority(priority) ?? (batchTask ? BATCH_PRIORITY : undefined);
  return p !== undefined ? { priority: p } : {};
}
