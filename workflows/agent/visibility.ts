/** What the Temporal UI shows of a run (docs/architecture.md#visibility): current details, and search attributes when the namespace has them. */
import { upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { KEEL_COST_USD, KEEL_MODEL, KEEL_STATUS, KEEL_TURNS } from '../../common/search-attributes.js';
import { PATCH } from '../patches.js';
import type { SessionState } from './state.js';
import { since } from '../since.js';

/** What the search attributes show of the carried state. */
export type VisibleState = Pick<SessionState, 'status' | 'turns' | 'usage' | 'searchAttributes'> & {
  config: Pick<SessionState['config'], 'model'>;
};

/** Search attribute values last upserted. */
export interface Published {
  status: string;
  model: string;
  turns: number;
  cost: number;
}

/**
 * At a turn end KeelTurns and KeelCostUsd are upserted every this many turns only (each upsert is a history event and a
 * billable action); a status change and the run's end upsert the current values at once.
 */
export const TURN_UPSERT_STRIDE = 10;

/**
 * At a turn end: whether the search attributes are due (`AgentSession.publishTurnEnd`), else the details alone are
 * republished. Due every `TURN_UPSERT_STRIDE` turns and at a status change. `lean`: a sub-agent or batch task started lean
 * (0.12.0, `RunFeatures.leanStart`), which has the 0.3.0 rule without asking its patch.
 */
export function turnEndUpsertDue(st: VisibleState, published: Published | undefined, lean: boolean): boolean {
  const statusUnchanged = published?.status === st.status && published.model === st.config.model;
  return !(
    st.searchAttributes &&
    statusUnchanged &&
    st.turns % TURN_UPSERT_STRIDE !== 0 &&
    (lean || since(PATCH.coarseTurnUpserts))
  );
}

/**
 * At every status change (and, before 0.3.0, every turn end; `AgentSession.publish`): upserts the search attributes
 * that changed since `last` (each upsert is a history event). Returns what is published now. `lean`: a sub-agent or
 * batch task started lean (0.12.0): the 0.4.0 rule without asking its patch (a sub-agent's parent set them in its start).
 */
export function publishAttributes(st: VisibleState, last: Published | undefined, lean: boolean): Published | undefined {
  if (!st.searchAttributes) return last;
  const now = {
    status: st.status,
    model: st.config.model,
    turns: st.turns,
    cost: Math.round(st.usage.cost.total * 1e6) / 1e6,
  };
  // set at start (AgentClient) or carried by continue-as-new: upserting them again is a no-op
  if (!last && alreadyHeld(now) && (lean || since(PATCH.startAttributes))) return now;
  if (
    last &&
    last.status === now.status &&
    last.model === now.model &&
    last.turns === now.turns &&
    last.cost === now.cost
  )
    return last;
  upsertSearchAttributes([
    { key: KEEL_STATUS, value: now.status },
    { key: KEEL_MODEL, value: now.model },
    { key: KEEL_TURNS, value: now.turns },
    { key: KEEL_COST_USD, value: now.cost },
  ]);
  return now;
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
 * a KeelStatus still saying `running` or `waiting` (set at start by `AgentClient`, or by a lean sub-agent's parent:
 * `lean`, which implies the patch) is corrected to `failed`.
 */
export function publishFailedEnd(lean: boolean): void {
  const status = workflowInfo().typedSearchAttributes.get(KEEL_STATUS);
  if ((status === 'running' || status === 'waiting') && (lean || since(PATCH.startAttributes)))
    upsertSearchAttributes([{ key: KEEL_STATUS, value: 'failed' }]);
}
