/**
 * One marker for every patch a run takes (0.13.0, `PATCH.impliesEarlier`; docs/versioning.md, point 7). Before it, a
 * run recorded each patch's marker at its first `patched()` — two history events each, the marker and the SDK's
 * `TemporalChangeVersion` upsert (a visibility write) — four or five in a plain tool run. A run started on 0.13.0 or
 * later records `keel-0.13-implies-earlier` once, at its start, and takes every earlier id's new path without asking it.
 */
import { patched } from '@temporalio/workflow';
import type { BUDGET_PATCH } from './agent/budget.js';
import type { COMPACTION_PATCH } from './agent/compaction.js';
import type { LARGE_PAYLOADS_PATCH } from './agent/continue-as-new.js';
import type { BATCH_BUDGET_PATCH } from './batch/budget.js';
import type { LOST_ATTEMPT_USAGE_PATCH } from './failure-outcomes.js';
import { PATCH, type PatchId } from './patches.js';

/** The ids the 0.13.0 marker implies: every id released before it (the table's, and the five named beside their code). */
export type EarlierPatch =
  | Exclude<PatchId, typeof PATCH.impliesEarlier>
  | typeof LOST_ATTEMPT_USAGE_PATCH
  | typeof BUDGET_PATCH
  | typeof BATCH_BUDGET_PATCH
  | typeof COMPACTION_PATCH
  | typeof LARGE_PAYLOADS_PATCH;

/**
 * At a run's start, before its first command: records the 0.13.0 marker in a new run. A history recorded before 0.13.0
 * has none there, so replaying it answers false and every `since(id)` asks `id` as that history did.
 */
export function askImpliedPatches(): void {
  patched(PATCH.impliesEarlier);
}

/**
 * Whether the run takes `id`'s new path: it has the 0.13.0 marker (asked first; in a run that has it, `id` is never
 * asked), else `patched(id)` as before 0.13.0. Workflow code only; call it where `patched(id)` was called.
 */
export function since(id: EarlierPatch): boolean {
  return patched(PATCH.impliesEarlier) || patched(id);
}
