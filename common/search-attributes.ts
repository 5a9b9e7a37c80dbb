import { defineSearchAttributeKey, SearchAttributeType, type SearchAttributePair } from '@temporalio/common';
import type { ConnectionLike } from '@temporalio/client';

/** Keel's search attributes (docs/architecture.md#visibility): `KeelStatus="waiting"` lists sessions waiting for input. */
export const KEEL_STATUS = defineSearchAttributeKey('KeelStatus', SearchAttributeType.KEYWORD);
export const KEEL_MODEL = defineSearchAttributeKey('KeelModel', SearchAttributeType.KEYWORD);
export const KEEL_TURNS = defineSearchAttributeKey('KeelTurns', SearchAttributeType.INT);
export const KEEL_COST_USD = defineSearchAttributeKey('KeelCostUsd', SearchAttributeType.DOUBLE);

/** A fork's original (its workflow id), set when the fork starts: `KeelForkedFrom = "<id>"` lists a run's forks. */
export const KEEL_FORKED_FROM = defineSearchAttributeKey('KeelForkedFrom', SearchAttributeType.KEYWORD);

/** The attributes every run has; `keelSearchAttributesRegistered` asks for these. */
const KEEL_RUN_ATTRIBUTE_KEYS = [KEEL_STATUS, KEEL_MODEL, KEEL_TURNS, KEEL_COST_USD];

/** Every attribute Keel registers (the dev server, the cluster, deploy/setup-keel.sh). */
export const KEEL_SEARCH_ATTRIBUTE_KEYS = [...KEEL_RUN_ATTRIBUTE_KEYS, KEEL_FORKED_FROM];

/**
 * Whether `namespace` has the four search attributes of every Keel run registered, asked of the operator API. False when it cannot
 * tell (no permission, an older server). Must not throw.
 */
export async function keelSearchAttributesRegistered(
  connection: ConnectionLike,
  namespace: string | undefined,
): Promise<boolean> {
  try {
    const r = await connection.operatorService.listSearchAttributes({ namespace: namespace ?? 'default' });
    return KEEL_RUN_ATTRIBUTE_KEYS.every((k) => k.name in (r.customAttributes ?? {}));
  } catch {
    return false;
  }
}

/** Whether `namespace` has `KeelForkedFrom` (registered from 0.9.0): a fork sets it only then. Must not throw. */
export async function forkAttributeRegistered(
  connection: ConnectionLike,
  namespace: string | undefined,
): Promise<boolean> {
  try {
    const r = await connection.operatorService.listSearchAttributes({ namespace: namespace ?? 'default' });
    return KEEL_FORKED_FROM.name in (r.customAttributes ?? {});
  } catch {
    return false;
  }
}

/**
 * The values a run's search attributes have before its first step: status `running`, its model, no turns, no cost.
 * Set at start, a run that begins running has nothing to upsert at its first step (workflows/agent/visibility.ts).
 */
export function startSearchAttributes(model: string): SearchAttributePair[] {
  return [
    { key: KEEL_STATUS, value: 'running' },
    { key: KEEL_MODEL, value: model },
    { key: KEEL_TURNS, value: 0 },
    { key: KEEL_COST_USD, value: 0 },
  ];
}
