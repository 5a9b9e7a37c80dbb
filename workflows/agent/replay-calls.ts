/**
 * A counterfactual replay's sub-agent calls (docs/runs.md#counterfactual-replay): a sub-agent call is a tool call, so
 * in a replaying run it goes through the preparation activity, which serves it from the record (no child run), answers
 * it "not in the record", or lets it run by `liveTools` (activities/replay/replay-records.ts). Outside a replay, a
 * direct sub-agent call starts its child without that activity (0.8.0).
 */

import type { RunConfig } from './state.js';
import { PATCH } from '../patches.js';
import { since } from '../since.js';

/**
 * Whether a sub-agent call that would start its child directly must be prepared first, because the run replays a
 * recorded one (0.11.0, `PATCH.replaySubAgents`: asked only in a replaying run; a 0.10.0 replay's history takes the
 * direct path it recorded).
 */
export function preparedForReplay(config: Pick<RunConfig, 'replay'>): boolean {
  return config.replay !== undefined && since(PATCH.replaySubAgents);
}
