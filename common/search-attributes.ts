import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** Keel's search attributes (docs/architecture.md#visibility): `KeelStatus="waiting"` lists sessions waiting for input. */
export const KEEL_STATUS = defineSearchAttributeKey('KeelStatus', SearchAttributeType.KEYWORD);
export const KEEL_MODEL = defineSearchAttributeKey('KeelModel', SearchAttributeType.KEYWORD);
export const KEEL_TURNS = defineSearchAttributeKey('KeelTurns', SearchAttributeType.INT);
export const KEEL_COST_USD = defineSearchAttributeKey('KeelCostUsd', SearchAttributeType.DOUBLE);

export const KEEL_SEARCH_ATTRIBUTE_KEYS = [KEEL_STATUS, KEEL_MODEL, KEEL_TURNS, KEEL_COST_USD];
