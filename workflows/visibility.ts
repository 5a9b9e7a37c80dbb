/** What the Temporal UI shows of a run (docs/architecture.md#visibility): current details, and search attributes when the namespace has them. */
import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { KEEL_COST_USD, KEEL_MODEL, KEEL_STATUS, KEEL_TURNS } from '../common/search-attributes.js';
import { renderDetails } from './details.js';
import type { Session } from './session.js';

/** Republishes only the current details (not a command): when a model call or a tool starts or ends. */
export function publishDetails(s: Session): void {
  setCurrentDetails(renderDetails(s));
}

/** Call at every status change and turn end. Upserts only values that changed (each upsert is a history event). */
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
