/** The tree-budget ledger (common/tree/budget.ts): grants, refusals, settlements, lost attempts, the bound. */
import { describe, expect, it } from 'vitest';
import { asClaim, emptyLedger, grouped, TreeLedger, type TreeLedgerState } from '../../common/tree/budget.js';

const zero = () => ({ tokens: 0, costUsd: 0, modelCalls: 0 });
const claim = (key: string, tokens: number, modelCalls = 1) => ({ key, tokens, costUsd: 0, modelCalls });

describe('TreeLedger', () => {
  it('grants while settled + reserved is below the limit, then refuses with the committed figures', () => {
    const st: TreeLedgerState = emptyLedger();
    const ledger = new TreeLedger({ maxTokens: 1000 }, st, zero, 'tree budget');
    expect(ledger.reserve(claim('a/r/1/1', 600))).toEqual({ granted: true });
    expect(ledger.reserve(claim('b/r/1/1', 600))).toEqual({ granted: true }); // 600 < 1000: granted, now 1200
    expect(ledger.reserve(claim('c/r/1/1', 600))).toEqual({
      granted: false,
      error: 'Budget exceeded: tokens 0 spent, 1,200 reserved of 1,000 (tree budget)',
    });
    ledger.settle(claim('a/r/1/1', 100));
    ledger.settle(claim('a/r/1/1', 100)); // a second settlement of the same attempt is ignored
    expect(ledger.lines()).toEqual([{ kind: 'tokens', spent: 100, reserved: 600, limit: 1000 }]);
    expect(ledger.reserve(claim('c/r/1/1', 600))).toEqual({ granted: true });
    expect(ledger.reserve(claim('c/r/1/1', 600))).toEqual({ granted: true }); // a retried Update: idempotent
    expect(ledger.reserved().tokens).toBe(1200);
  });

  it('a later attempt of the same request spends the earlier, lost attempts at their reservation', () => {
    const st = emptyLedger();
    const ledger = new TreeLedger({ maxTokens: 1500 }, st, zero, 'tree budget');
    expect(ledger.reserve(claim('w/r/2/1', 502))).toEqual({ granted: true });
    expect(ledger.reserve(claim('w/r/2/2', 502, 0))).toEqual({ granted: true });
    expect(ledger.lines()).toEqual([{ kind: 'tokens', spent: 502, reserved: 502, limit: 1500 }]);
    expect(ledger.reserve(claim('w/r/2/3', 502, 0))).toEqual({ granted: true });
    expect(ledger.reserve(claim('w/r/2/4', 502, 0))).toEqual({
      granted: false,
      error: 'Budget exceeded: tokens 1,506 spent, 0 reserved of 1,500 (tree budget)',
    });
    expect(st.reserved).toEqual({});
    expect(st.spent).toEqual({ tokens: 1506, costUsd: 0, modelCalls: 1 });
  });

  it("counts the root's own spend and its request in flight; without a budget grants and records nothing", () => {
    const ledger = new TreeLedger(
      { maxModelCalls: 2 },
      emptyLedger(),
      () => ({ tokens: 0, costUsd: 0, modelCalls: 1 }),
      'batch budget',
    );
    ledger.hold({ tokens: 10, costUsd: 0, modelCalls: 0 });
    expect(ledger.reserve(claim('a/r/1/1', 10))).toEqual({ granted: true });
    expect(ledger.reserve(claim('b/r/1/1', 10))).toEqual({
      granted: false,
      error: 'Budget exceeded: model calls 1 spent, 1 reserved of 2 (batch budget)',
    });
    ledger.release();
    const st = emptyLedger();
    expect(new TreeLedger(undefined, st, zero, 'tree budget').reserve(claim('a/r/1/1', 10))).toEqual({ granted: true });
    expect(st).toEqual(emptyLedger());
  });

  it('onlyReserved (0.6.3): true while only reservations fill the limit, false once the settled spend reaches it', () => {
    const st = emptyLedger();
    const ledger = new TreeLedger({ maxTokens: 1000 }, st, zero, 'tree budget');
    expect(ledger.reserve(claim('a/r/1/1', 4099))).toEqual({ granted: true });
    expect(ledger.reserve(claim('b/r/1/1', 4099))).toEqual({
      granted: false,
      error: 'Budget exceeded: tokens 0 spent, 4,099 reserved of 1,000 (tree budget)',
    });
    expect(ledger.onlyReserved()).toBe(true); // 0 spent: the reservation in flight may settle for less
    ledger.settle(claim('a/r/1/1', 400));
    expect(ledger.onlyReserved()).toBe(false);
    expect(ledger.reserve(claim('b/r/1/1', 4099))).toEqual({ granted: true });
    ledger.settle(claim('b/r/1/1', 700)); // 1,100 spent: no room whatever settles
    expect(ledger.reserve(claim('c/r/1/1', 10))).toEqual({
      granted: false,
      error: 'Budget exceeded: tokens 1,100 spent, 0 reserved of 1,000 (tree budget)',
    });
    expect(ledger.onlyReserved()).toBe(false);
    expect(st).toEqual({ spent: { tokens: 1100, costUsd: 0, modelCalls: 2 }, reserved: {} });
  });

  it('words a refusal with the spend and the reservations apart, numbers grouped', () => {
    const ledger = new TreeLedger({ maxTokens: 250 }, emptyLedger(), zero, 'batch budget');
    ledger.reserve(claim('a/r/1/1', 4099));
    expect(ledger.reserve(claim('b/r/1/1', 4099))).toEqual({
      granted: false,
      error: 'Budget exceeded: tokens 0 spent, 4,099 reserved of 250 (batch budget)',
    });
    expect([grouped(0), grouped(999), grouped(1000), grouped(1234567), grouped(0.0125)]).toEqual([
      '0',
      '999',
      '1,000',
      '1,234,567',
      '0.0125',
    ]);
  });

  it('reads only well-formed claims', () => {
    expect(asClaim(claim('a/r/1/1', 5))).toEqual(claim('a/r/1/1', 5));
    expect(asClaim({ key: 'a', tokens: -1, costUsd: 0, modelCalls: 1 })).toBeUndefined();
    expect(asClaim({ key: '', tokens: 1, costUsd: 0, modelCalls: 1 })).toBeUndefined();
    expect(asClaim({ key: 'a', tokens: 1, costUsd: 0, modelCalls: 2 })).toBeUndefined();
    expect(asClaim('a')).toBeUndefined();
  });
});
