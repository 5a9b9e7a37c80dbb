/**
 * How runs' model activities, workers and `keel limits` talk to a key's limiter workflow (workflows/limits/limiter.ts).
 * A worker's limits client asks for all its waiting requests by one Update per tick (with start: the first starts the
 * key's limiter), answered at once; while requests wait, it asks again when told (an Update held open would count against the server's limit of Updates in flight per
 * workflow). Not signal + query: under load a consistent query waits behind the signal's workflow task, and the
 * server buffers only one such query per workflow ("consistent query buffer is full").
 */
import type { ProviderLimit } from './definition.js';
import type { LedgerState } from './ledger.js';

/** The limiter's workflow type. */
export const LIMITER_WORKFLOW_TYPE = 'providerLimiterWorkflow';
/**
 * Update (with start): a model request attempt asks for room, or renews its ticket (`LimitAsk` → `LimitAnswer`). What
 * 0.9.0 workers send (one per attempt); 0.10.0 workers send {@link LIMITS_BATCH_UPDATE}. The limiter serves both.
 */
export const LIMITS_ASK_UPDATE = 'keelLimitsAsk';
/**
 * Update (with start): one worker's asks and settlements of one tick (`LimitBatch` → `LimitBatchAnswer`), sent by its
 * limits client (activities/limits/client.ts) instead of one `keelLimitsAsk` per attempt and one settle signal each.
 */
export const LIMITS_BATCH_UPDATE = 'keelLimitsBatch';
/** Signal: a model request attempt ended (`LimitSettle`). */
export const LIMITS_SETTLE_SIGNAL = 'keelLimitsSettle';
/** Signal: the provider answered 429 / 529 with `retry-after` (`{ ms }`): every request of the key waits that long. */
export const LIMITS_BACKOFF_SIGNAL = 'keelLimitsBackoff';
/** Update: a worker's definition (or, later, an operator's change): `{ spec, limit, replace? }` → `{ ok } | { conflict }`. */
export const LIMITS_DEFINE_UPDATE = 'keelLimitsDefine';
/** Query: the limiter's `LimiterSnapshot`. */
export const LIMITS_STATE_QUERY = 'keelLimitsState';
/** Signal to a run: its model request waits for the limits (`{ text }`), or waits no more (`{}`). */
export const PROVIDER_WAIT_SIGNAL = 'keelProviderWait';

/** The limiter's input: a new one (key and limit) or the ledger carried by continue-as-new. */
export type LimiterInput = { key: string; limit: ProviderLimit } | { ledger: LedgerState };

export interface DefineLimits {
  spec: string;
  limit: ProviderLimit;
  /** Replace the held definition (an operator's change; no command sends it yet); otherwise a different one is refused. */
  replace?: boolean;
}

export type DefineAnswer = { ok: true } | { ok: false; conflict: string };
