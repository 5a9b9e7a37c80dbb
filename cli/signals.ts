/**
 * The CLI's signal handling. Both helpers install their handlers when called: call them **before** printing the line a
 * caller (a script, a test, an operator) waits for — a header, a ready or start line — so a signal sent as soon as that
 * line is seen is caught; installed after it, the signal can land first and end the process by its default action
 * (CI saw this once under load: `keel batch` died by SIGTERM with no resume hint).
 */

/**
 * Ctrl-C (or another signal) while the CLI follows a run or a batch: stops following, never the workflow.
 * `dispose()` removes the handlers; must not throw.
 */
export function stopFollowingOn(signals: readonly NodeJS.Signals[]): { signal: AbortSignal; dispose(): void } {
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  for (const s of signals) process.once(s, onSignal);
  return { signal: abort.signal, dispose: () => signals.forEach((s) => process.off(s, onSignal)) };
}

/**
 * Resolves at the first SIGINT/SIGTERM (`keel dev`, `keel worker`, `keel encryption serve`). Holds a timer meanwhile:
 * the dev server is a child of the native bridge and keeps nothing alive in Node's event loop, so without it
 * `keel dev --no-worker` would end at once.
 */
export function untilSignal(): Promise<NodeJS.Signals> {
  const keepAlive = setInterval(() => {}, 2 ** 30);
  return new Promise<NodeJS.Signals>((resolve) => {
    process.once('SIGINT', () => resolve('SIGINT'));
    process.once('SIGTERM', () => resolve('SIGTERM'));
  }).finally(() => clearInterval(keepAlive));
}
