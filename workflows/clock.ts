/**
 * The one clock of workflow code. Temporal's workflow runtime replaces the global `Date`: it reads the start time of the
 * current workflow task, recorded in history, so the value is identical on replay (a documented SDK guarantee, not the
 * host clock). Message timestamps are the only use; control flow never depends on it.
 */
export function workflowNow(): number {
  return new Date().getTime();
}
