/** What the Temporal UI shows of a run (docs/architecture.md#visibility): current details, and search attributes when the namespace has them. */
import { patched, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { KEEL_COST_USD, KEEL_MODEL, KEEL_STATUS, KEEL_TURNS } from '../../common/search-attributes.js';
import { renderDetails } from './details.js';
import { PATCH } from '../patches.js';
import type { Session } from './session.js';

/** Republishes only the current details (not a command): when a model call or a tool starts or ends. */
export function publishDetails(s: Session): void {
  setCurrentDetails(renderDetails(s));
}

/**
 * At a turn end KeelTurns and KeelCostUsd are upserted every this many turns only (each upsert is a history event and a
 * billable action); a status change and the run's end upsert the current values at once.
 */
export const TURN_UPSERT_STRIDE = 10;

/** Call at every turn end: the current details, and the search attributes every `TURN_UPSERT_STRIDE` turns. */
export function publishTurnEnd(s: Session): void {
  const st = s.state;
  const statusUnchanged = s.published?.status === st.status && s.published.model === st.config.model;
  if (st.searchAttributes && statusUnchanged && st.turns % TURN_UPSERT_STRIDE !== 0 && patched(PATCH.coarseTurnUpserts))
    return publishDetails(s);
  publish(s);
}

/** Call at every status change (and, before 0.3.0, every turn end). Upserts only values that changed (each upsert is a history event). */
export function publish(s: Session): void {
  setCurrentDetails(renderDetails(s));
  if (!s.state.searchAttributes) return;
  const st = s.state;
  const now = {
    status: st.status,
    model: st.config.model,
    turns: st.turns,
    cost: Math.round(st.usage.cost.total * 1e6) / 1e6,
  };
  if (!s.published && alreadyHeld(now) && patched(PATCH.startAttributes)) {
    s.published = now; // set at start (AgentClient) or carried by continue-as-new: upserting them again is a no-op
    return;
  }
  const last = s.published;
  if (
    last &&
    last.status === now.status &&
    last.model === now.model &&
    last.turns === now.turns &&
    last.cost === now.cost
  )
    return;
  upsertSearchAttributes([
    { key: KEEL_STATUS, value: now.status },
    { key: KEEL_MODEL, value: now.model },
    { key: KEEL_TURNS, value: now.turns },
    { key: KEEL_COST_USD, value: now.cost },
  ]);
  s.published = now;
}

/** Whether the run's search attributes already hold exactly these values. */
function alreadyHeld(now: { status: string; model: string; turns: number; cost: number }): boolean {
  const held = workflowInfo().typedSearchAttributes;
  return (
    held.get(KEEL_STATUS) === now.status &&
    held.get(KEEL_MODEL) === now.model &&
    held.get(KEEL_TURNS) === now.turns &&
    held.get(KEEL_COST_USD) === now.cost
  );
}

/**
 * Call when the run fails without having published its end (bad input found by the worker, a bug in workflow code):
 * a KeelStatus still saying `running` or `waiting` (set at start by `AgentClient`) is corrected to `failed`.
 */
export function publishFailedEnd(): void {
  const status = workflowInfo().typedSearchAttributes.get(KEEL_STATUS);
  if ((status === 'running' || status === 'waiting') && patched(PATCH.startAttributes))
    upsertSearchAttributes([{ key: KEEL_STATUS, value: 'failed' }]);
}
