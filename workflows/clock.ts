/**
 * The one clock of workflow code. Temporal's workflow runtime defines `Date` as the start time of the current workflow
 * task, recorded in history, so the value is identical on replay (SDK docs: "Date.now() returns the workflow task
 * start time"). Message timestamps are the only use; control flow never depends on it.
 */
export function workflowNow(): number {
  return new Date().getTime();
}
