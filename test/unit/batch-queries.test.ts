/**
 * The batch's progress and results queries answer from one builder each (workflows/batch/input.ts), for the sliding
 * window and for the 0.3.0 loop that batches started on 0.3.0 still run.
 */
import { describe, expect, it } from 'vitest';
import type { CompactOutcome } from '../../workflows/batch/drain.js';
import { batchProgress, resultsPage } from '../../workflows/batch/input.js';

describe('batch queries', () => {
  it('a results page: finished tasks from their compact outcome and error, the rest running or queued', () => {
    const outcomes: (CompactOutcome | null)[] = [[0, 2, 30, 0.001], [2, 1, 5, 0, 'provider down'], null];
    const page = resultsPage({ from: 1, limit: 3 }, 4, {
      workflowId: (i) => `b-${i}`,
      outcome: (i) => outcomes[i],
      error: (i) => outcomes[i]?.[4],
      running: (i) => i === 2,
    });
    expect(page).toEqual({
      total: 4,
      results: [
        { index: 1, workflowId: 'b-1', status: 'failed', turns: 1, tokens: 5, cost: 0, error: 'provider down' },
        { index: 2, workflowId: 'b-2', status: 'running' },
        { index: 3, workflowId: 'b-3', status: 'queued' },
      ],
    });
    const first = resultsPage(undefined, 4, {
      workflowId: (i) => `b-${i}`,
      outcome: (i) => outcomes[i],
      error: () => undefined,
      running: () => false,
    });
    expect(first.results[0]).toEqual({
      index: 0,
      workflowId: 'b-0',
      status: 'completed',
      turns: 2,
      tokens: 30,
      cost: 0.001,
    });
    expect(first.results).toHaveLength(4);
  });

  it('progress: the counters, queued = total - started, cost rounded to micro-dollars, the budget when there is one', () => {
    const st = {
      next: 3,
      done: 1,
      failed: 1,
      byStatus: {},
      tokens: 35,
      cost: 0.0010004,
      continuedAsNew: 2,
      failures: [],
    };
    expect(batchProgress(st, { total: 5, running: 1, concurrency: 2, phase: 'running' })).toEqual({
      total: 5,
      done: 1,
      failed: 1,
      running: 1,
      queued: 2,
      tokens: 35,
      cost: 0.001,
      continuedAsNew: 2,
      concurrency: 2,
      phase: 'running',
    });
    const budget = { lines: [{ kind: 'tokens' as const, used: 35, limit: 100 }], spent: false };
    expect(batchProgress(st, { total: 5, running: 1, concurrency: 2, phase: 'draining', budget })).toMatchObject({
      phase: 'draining',
      budget,
    });
  });
});
