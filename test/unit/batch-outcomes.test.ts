/**
 * What a sliding-window batch carries across continue-as-new (workflows/batch/window.ts, workflows/batch/outcomes.ts): every
 * outcome packed into one string, so 50,000 finished tasks with worst-case-ish outcomes stay far below Temporal's
 * 2 MB payload limit; and the packing round-trips exactly.
 */
import { describe, expect, it } from 'vitest';
import {
  MAX_ERROR_RANGES,
  MAX_ERROR_TEXTS,
  packErrors,
  packOutcomes,
  unpackErrors,
  unpackOutcomes,
  type PackedOutcome,
} from '../../workflows/batch/outcomes.js';
import { carriedState, windowState, type WindowCarried } from '../../workflows/batch/window.js';
import type { BatchCarried } from '../../workflows/batch/drain.js';

const TASKS = 50_000;

describe('batch carried state', () => {
  it('50,000 finished tasks (999 turns, 10 M tokens, $100 each; half failed, 100 distinct 300-character errors) carry < 1 MB', () => {
    const outcomes: PackedOutcome[] = [];
    for (let i = 0; i < TASKS; i++) outcomes.push([i % 4, 999, 9_999_999 - i, 99.999999 - i / 1e6]);
    const { st } = windowState(undefined);
    st.next = TASKS;
    st.done = TASKS / 2;
    st.failed = TASKS / 2;
    st.byStatus = { completed: TASKS / 4, stopped: TASKS / 4, failed: TASKS / 4, cancelled: TASKS / 4 };
    st.tokens = outcomes.reduce((n, o) => n + o[2], 0);
    st.cost = outcomes.reduce((n, o) => n + o[3], 0);
    st.modelCalls = TASKS * 999;
    st.continuedAsNew = 5_000;
    st.failures = Array.from({ length: 100 }, (_, k) => ({
      index: 4 * k + 2,
      workflowId: `keel-batch-00000000-0000-0000-0000-000000000000-${4 * k + 2}`,
      status: 'failed' as const,
      error: `é${'x'.repeat(298)}…`,
    }));
    // every failed task has an error, the texts interleaved so that no two neighbours share one
    const texts = Array.from({ length: MAX_ERROR_TEXTS }, (_, k) => `${k} é${'x'.repeat(290)}…`);
    const errors = new Map<number, string>();
    let n = 0;
    for (let i = 0; i < TASKS; i++) if (outcomes[i][0] >= 2) errors.set(i, texts[n++ % MAX_ERROR_TEXTS]);
    const carried = carriedState(st, outcomes, errors, TASKS);
    const bytes = Buffer.byteLength(JSON.stringify(carried));
    console.log(`[batch] carried state at ${TASKS} worst-case finished tasks: ${bytes} bytes`);
    expect(bytes).toBeLessThan(1024 * 1024);
    expect(carried.packed.length).toBe(14 * TASKS);
    expect(carried.errors.texts).toHaveLength(MAX_ERROR_TEXTS);
    expect(carried.errors.ranges).toHaveLength(MAX_ERROR_RANGES);

    // the next run reads back every outcome exactly (cost to the micro-dollar)
    const next = windowState(JSON.parse(JSON.stringify(carried)) as WindowCarried);
    const back = next.outcomes;
    expect(next.errors.get(3)).toBe(texts[1]);
    expect(next.errors.has(1)).toBe(false);
    expect(back).toHaveLength(TASKS);
    for (const i of [0, 1, 2, 3, 12_345, TASKS - 1]) {
      expect(back[i]![0]).toBe(outcomes[i][0]);
      expect(back[i]![1]).toBe(999);
      expect(back[i]![2]).toBe(outcomes[i][2]);
      expect(back[i]![3]).toBeCloseTo(outcomes[i][3], 6);
    }
  });

  it('typical outcomes take under 10 characters a task; unfinished tasks one, trailing ones none', () => {
    const outcomes: (PackedOutcome | null)[] = [];
    for (let i = 0; i < 1000; i++) outcomes.push(i % 10 === 3 ? null : [0, 4, 3_000 + i, 0.0123]);
    const packed = packOutcomes([...outcomes, null, null], 1002);
    expect(packed.length / 1000).toBeLessThan(10);
    const back = unpackOutcomes(packed);
    expect(back).toHaveLength(1000);
    expect(back[3]).toBeNull();
    expect(back[7]).toEqual([0, 4, 3_007, 0.0123]);
    expect(unpackOutcomes('')).toEqual([]);
    expect(unpackOutcomes(packOutcomes([[3, 0, 0, 0]], 1))).toEqual([[3, 0, 0, 0]]);
    expect(() => unpackOutcomes('0')).toThrow(/malformed/);
  });

  it('error texts: each once, consecutive tasks with one text in one range', () => {
    const errors = new Map<number, string>([
      [9, 'b'],
      [3, 'a'],
      [4, 'a'],
      [5, 'a'],
      [7, 'a'],
      [8, 'b'],
    ]);
    const packed = packErrors(errors);
    expect(packed).toEqual({
      texts: ['a', 'b'],
      ranges: [
        [3, 5, 0],
        [7, 7, 0],
        [8, 9, 1],
      ],
    });
    expect(unpackErrors(packed)).toEqual(new Map([...errors].sort((x, y) => x[0] - y[0])));
  });

  it('a 0.3.0 run’s carried state becomes the window’s: nothing running, outcomes kept', () => {
    const legacy: BatchCarried = {
      next: 3,
      done: 2,
      failed: 1,
      byStatus: { completed: 2, failed: 1 },
      tokens: 30,
      cost: 0.3,
      continuedAsNew: 1,
      failures: [{ index: 1, workflowId: 'b-1', status: 'failed', error: 'boom' }],
      outcomes: [
        [0, 1, 10, 0.1],
        [2, 1, 10, 0.1, 'boom'],
        [0, 1, 10, 0.1],
      ],
    };
    const { st, outcomes, errors } = windowState(legacy);
    expect([...errors]).toEqual([[1, 'boom']]);
    expect(st).toMatchObject({ next: 3, done: 2, failed: 1, running: [], continuedAsNew: 1 });
    expect('outcomes' in st).toBe(false);
    expect(outcomes).toEqual([
      [0, 1, 10, 0.1],
      [2, 1, 10, 0.1],
      [0, 1, 10, 0.1],
    ]);
  });
});
