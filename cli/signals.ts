/**
 * Ctrl-C (or another signal) while the CLI follows a run or a batch: stops following, never the workflow.
 *
 * Install it **before** the header is printed: a caller (a script, a test, an operator) that sends the signal as soon
 * as it sees the header must find it caught; installed after, the signal can land first and end the process by the
 * default action, with no resume hint (CI saw this once under load). `dispose()` removes the handlers; must not throw.
 */
export function stopFollowingOn(signals: readonly NodeJS.Signals[]): { signal: AbortSignal; dispose(): void } {
  const abort = new AbortController();
  const onSignal = () => abort.abort();
  for (const s of signals) process.once(s, onSignal);
  return { signal: abort.signal, dispose: () => signals.forEach((s) => process.off(s, onSignal)) };
}
