/**
 * `providerLimiterWorkflow`: the one holder of a provider key's limits in a namespace (docs/provider-limits.md), id
 * `keel-limits:<taskQueue>:<key>`, started by the first model request that asks for room (Update-with-start) or by a
 * worker's definition. Its ledger (common/limits/ledger.ts) answers each ask at once — granted, or the wait text, the
 * place in line and when to ask again — and takes settlements, `retry-after` back-offs and definitions. It issues no command
 * but a timer for the earliest lapse of what it holds (to reclaim a dead worker's grant while no ask comes) and
 * continue-as-new (when its history is full, carrying the ledger), and sets its current details (the Web UI).
 * Auto-upgrading: it moves to the current build at each continue-as-new, so it never holds an old build alive.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineSignal,
  defineUpdate,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  workflowInfo,
} from '@temporalio/workflow';
import { limitSpec } from '../../common/limits/definition.js';
import {
  CLIENT_LEASE_MS,
  LimiterLedger,
  newLedger,
  type LimitAnswer,
  type LimitAsk,
  type LimitBatch,
  type LimitBatchAnswer,
  type LimiterSnapshot,
  type LimitSettle,
} from '../../common/limits/ledger.js';
import {
  LIMITS_BACKOFF_SIGNAL,
  LIMITS_DEFINE_UPDATE,
  LIMITS_ASK_UPDATE,
  LIMITS_BATCH_UPDATE,
  LIMITS_SETTLE_SIGNAL,
  LIMITS_STATE_QUERY,
  type DefineAnswer,
  type DefineLimits,
  type LimiterInput,
} from '../../common/limits/protocol.js';
import { workflowNow } from '../clock.js';
import { PATCH } from '../patches.js';
import { renderLimiterDetails } from './details.js';
import { since } from '../since.js';

export const limitsAskUpdate = defineUpdate<LimitAnswer, [LimitAsk]>(LIMITS_ASK_UPDATE);
export const limitsBatchUpdate = defineUpdate<LimitBatchAnswer, [LimitBatch]>(LIMITS_BATCH_UPDATE);
export const limitsSettleSignal = defineSignal<[LimitSettle]>(LIMITS_SETTLE_SIGNAL);
export const limitsBackoffSignal = defineSignal<[{ ms: number }]>(LIMITS_BACKOFF_SIGNAL);
export const limitsDefineUpdate = defineUpdate<DefineAnswer, [DefineLimits]>(LIMITS_DEFINE_UPDATE);
export const limitsStateQuery = defineQuery<LimiterSnapshot>(LIMITS_STATE_QUERY);

/** Continue-as-new after this many events (well below Temporal's suggestion: each is a small, fast history). */
export const LIMITER_EVENTS_PER_RUN = 10_000;

const amount = (n: unknown) => typeof n === 'number' && Number.isFinite(n) && n >= 0;
const wellFormed = (ask: LimitAsk | undefined) =>
  !!ask && typeof ask.request === 'string' && amount(ask.input) && amount(ask.outputCap) && amount(ask.holdMs);

const wellFormedBatch = (b: LimitBatch | undefined) =>
  !!b &&
  typeof b.client === 'string' &&
  typeof b.spec === 'string' &&
  Array.isArray(b.asks) &&
  b.asks.every(wellFormed) &&
  Array.isArray(b.settles) &&
  b.settles.every((s) => !!s && typeof s.request === 'string' && typeof s.attempt === 'number');

export async function providerLimiterWorkflow(input: LimiterInput): Promise<void> {
  const ledger = new LimiterLedger('ledger' in input ? input.ledger : newLedger(input.key, input.limit, workflowNow()));
  const show = () => setCurrentDetails(renderLimiterDetails(ledger.snapshot(workflowNow())));
  const after = <T>(result: T): T => {
    show();
    return result;
  };
  setHandler(limitsAskUpdate, (ask) => after(ledger.reserve(ask, workflowNow())), {
    validator: (ask) => {
      if (!wellFormed(ask)) throw new Error('keelLimitsAsk: malformed ask');
    },
    description:
      'A model request attempt asks for room (or renews its ticket): granted, or the wait text, its place and when to ask again.',
  });
  setHandler(limitsBatchUpdate, (b) => after(ledger.batch(b, workflowNow())), {
    validator: (b) => {
      if (!wellFormedBatch(b)) throw new Error('keelLimitsBatch: malformed batch');
    },
    description:
      "A worker's asks and settlements of one tick: its grants not settled yet, the line's wait and when to ask again.",
  });
  setHandler(limitsSettleSignal, (s) => after(ledger.settle(s, workflowNow())), {
    description: 'A model request attempt ended: its real usage (none: no call was made).',
  });
  setHandler(limitsBackoffSignal, (b) => after(amount(b?.ms) ? ledger.backoff(b.ms, workflowNow()) : undefined), {
    description: 'The provider answered 429 / 529 with retry-after: every request of this key waits that long.',
  });
  setHandler(limitsDefineUpdate, (d) => after(define(ledger, d)), {
    description:
      "A worker's definition of this key's limits: the held one, or refused (replace: an operator's change).",
  });
  setHandler(limitsStateQuery, () => ledger.snapshot(workflowNow()), {
    description: 'Current use, the requests in flight and the waiting line by priority.',
  });
  show();
  const full = () => workflowInfo().continueAsNewSuggested || workflowInfo().historyLength >= LIMITER_EVENTS_PER_RUN;
  if (since(PATCH.limiterWakes)) await reclaimLapses(ledger, full, show);
  else await condition(full);
  await condition(allHandlersFinished);
  ledger.advance(workflowNow());
  await continueAsNew<typeof providerLimiterWorkflow>({ ledger: ledger.st });
}
setWorkflowOptions({ versioningBehavior: 'AUTO_UPGRADE' }, providerLimiterWorkflow);

/**
 * Until `done`: a timer for the earliest lapse of what the ledger holds, then the ledger reclaims it (and grants what
 * fits) — a dead worker's grant frees its slot on time even when no ask or settlement comes to advance the ledger.
 */
async function reclaimLapses(ledger: LimiterLedger, done: () => boolean, show: () => void): Promise<void> {
  const holds = () => Object.keys(ledger.st.waiting).length > 0 || Object.keys(ledger.st.inFlight).length > 0;
  while (!done()) {
    const at = ledger.nextLapse();
    if (at === undefined) await condition(() => done() || holds());
    // at most a client lease ahead: a lapse that comes earlier than the one timed (a grant made meanwhile) waits
    // for this wake-up at worst
    else if (!(await condition(done, Math.min(Math.max(at - workflowNow(), 0), CLIENT_LEASE_MS) + 1))) {
      ledger.advance(workflowNow());
      show();
    }
  }
}

/** A definition: the same one is fine; another is refused unless it replaces the held one. */
function define(ledger: LimiterLedger, d: DefineLimits): DefineAnswer {
  if (d.spec === limitSpec(ledger.st.limit)) return { ok: true };
  if (!d.replace) return { ok: false, conflict: ledger.conflictText(d.spec) };
  ledger.redefine(d.limit);
  return { ok: true };
}
