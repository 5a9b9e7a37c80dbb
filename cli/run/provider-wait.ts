/**
 * `keel watch`: while a run's model request waits for its provider limits (docs/provider-limits.md), its current
 * details carry `⏳ waiting for anthropic tokens/min: 98,000 of 100,000 in use`; the watch prints that line (without
 * the hourglass) each time it changes. The wait is not an event of the run (it changes no command), so the watch
 * reads the details the Web UI shows (the `__temporal_workflow_metadata` query) once a second.
 */
import type { WorkflowHandle } from '@temporalio/client';

/** How often the watch reads the run's details. */
export const PROVIDER_WAIT_POLL_MS = 1_000;

/** The provider-limits wait line of a run's current details (no hourglass), or undefined when it does not wait. */
export function providerWaitLine(details: string | undefined): string | undefined {
  return details
    ?.split('\n')
    .find((l) => l.startsWith('⏳ waiting for '))
    ?.slice('⏳ '.length);
}

/** Reads the run's details until stopped and writes each new wait line; returns the stop. Never throws. */
export function watchProviderWait(handle: WorkflowHandle, write: (text: string) => void): () => void {
  let stopped = false;
  let last: string | undefined;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const poll = async (): Promise<void> => {
    try {
      const meta = await handle.query<{ currentDetails?: string }>('__temporal_workflow_metadata');
      const line = providerWaitLine(meta.currentDetails);
      if (!stopped && line && line !== last) write(`${line}\n`);
      last = line;
    } catch {
      // no worker answered right now: the next read
    }
    if (!stopped) timer = setTimeout(() => void poll(), PROVIDER_WAIT_POLL_MS);
  };
  void poll();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
