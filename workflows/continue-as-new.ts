import { workflowInfo } from '@temporalio/workflow';
import type { Session } from './session.js';

/** A continue-as-new input must fit one payload (2 MB server limit), with room to spare. */
const MAX_CARRIED_CHARS = 1_500_000;
const DEFAULT_AFTER_BYTES = 8 * 1024 * 1024;

/**
 * True at a turn boundary when history should be cut: Temporal suggests it, or it passed `continueAsNewAfterBytes`.
 * When the carried state itself is too large to carry, waits until history has grown by that much again.
 */
export function shouldContinueAsNew(s: Session): boolean {
  const info = workflowInfo();
  const limit = s.state.config.continueAsNewAfterBytes ?? DEFAULT_AFTER_BYTES;
  if (!(info.continueAsNewSuggested || info.historySize >= limit) || info.historySize < s.continueAsNewRetryAt) return false;
  if (JSON.stringify(s.state).length > MAX_CARRIED_CHARS) {
    s.continueAsNewRetryAt = info.historySize + limit;
    return false;
  }
  return true;
}
