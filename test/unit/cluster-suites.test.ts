/**
 * The cluster phase's file list (scripts/cluster/suites.ts): every file of the `temporal` project is classified once,
 * as a cluster suite (run again on the cluster) or a dev-server suite, and the list names only files that exist.
 */
import { readdirSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { CLUSTER_SUITES, clusterPhaseFilters, DEV_SERVER_SUITES } from '../../scripts/cluster/suites.js';

// never on the cluster: the 2,000-task batch and the 2,000-turn run prove Keel's own scale, not the server's
const HEAVY = ['batch.test.ts', 'large-transcript.test.ts'];
const temporalFiles = readdirSync(new URL('../temporal/', import.meta.url))
  .filter((f) => f.endsWith('.test.ts') && !HEAVY.includes(f))
  .sort();

describe('the cluster phase runs the suites that depend on the server', () => {
  it('classifies every file of the temporal project exactly once', () => {
    const both = Object.keys(CLUSTER_SUITES).filter((f) => f in DEV_SERVER_SUITES);
    expect(both, 'in both tables').toEqual([]);
    const classified = [...Object.keys(CLUSTER_SUITES), ...Object.keys(DEV_SERVER_SUITES)].sort();
    expect(classified).toEqual(temporalFiles);
  });

  it('gives a reason for each file', () => {
    for (const [file, why] of Object.entries({ ...CLUSTER_SUITES, ...DEV_SERVER_SUITES }))
      expect(why.length, file).toBeGreaterThan(8);
  });

  it('filters the cluster suites of test/temporal/ and every cluster-only test', () => {
    const filters = clusterPhaseFilters();
    expect(filters).toContain('test/temporal/replay-corpus.test.ts');
    expect(filters).not.toContain('test/temporal/loop-a1.test.ts');
    expect(filters.at(-1)).toBe('test/cluster/');
  });
});
