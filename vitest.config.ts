import { defineConfig } from 'vitest/config';
import { LongestFirst } from './test/longest-first.js';

// Test files run at once in the `unit` and `temporal` projects (one group). vitest's default is cores − 1: one file at a
// time on a 2-core machine, while most temporal files spend their time waiting on the server, timers and child
// processes (their CPU seconds are a fraction of their wall time: docs/development.md#test-run). KEEL_TEST_WORKERS
// overrides it (1 for the old one-at-a-time run).
const workers = Number(process.env.KEEL_TEST_WORKERS) || 3;

// The `heavy` project: files that need the machine to themselves, run one at a time after the others. batch and
// large-transcript are CPU-bound (thousands of child workflows, a 2,000-turn run; the closing queries of the latter
// each replay a run that carries ≈100 MB): beside the temporal files, batch made their timing-sensitive tests flaky
// (a `keel batch` SIGTERM test once saw the batch close first; 0.10.0 tried it there and moved it back).
// large-arguments measures this process's event-loop delay (p99 ≤ 100 ms), which other files burning CPU beside it
// would add to; so does edit-diff (a unit file: the diff of a large edit must not block the loop). provider-limits
// measures how a limiter shares a key between batches and an interactive run within seconds: beside other CPU-bound
// files the waits it compares stretch past its bounds.
const HEAVY = [
  'test/unit/builtin/edit-diff.test.ts',
  'test/temporal/batch.test.ts',
  'test/temporal/large-transcript.test.ts',
  'test/temporal/large-arguments.test.ts',
  'test/temporal/provider-limits.test.ts',
];

export default defineConfig({
  test: {
    setupFiles: ['test/print-node-version.ts', 'test/cpu-per-file.ts'],
    // the longest files of a recorded whole run start first, on a fresh clone too (test/longest-first.ts)
    sequence: { sequencer: LongestFirst },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          exclude: HEAVY,
          testTimeout: 30_000,
          maxWorkers: workers,
        },
      },
      {
        extends: true,
        test: {
          name: 'temporal',
          include: ['test/temporal/**/*.test.ts'],
          exclude: HEAVY,
          globalSetup: ['test/temporal/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          maxWorkers: workers,
        },
      },
      {
        // cluster-only fault and mTLS tests: run by `npm run test:cluster`, in a group of their own (groupOrder), never
        // at the same time as the `temporal` project, so killing services never disturbs the other suites
        extends: true,
        test: {
          name: 'cluster',
          sequence: { groupOrder: 1 },
          include: ['test/cluster/**/*.test.ts'],
          globalSetup: ['test/temporal/global-setup.ts'],
          testTimeout: 300_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        // issue 36's full scale (about 31 minutes at the provider's limit): not part of `npm test` nor `.ci/run`; run
        // by hand on a machine to itself (`npm run test:fleet`; docs/development.md#test-run says why)
        extends: true,
        test: {
          name: 'fleet',
          include: ['test/fleet/**/*.test.ts'],
          globalSetup: ['test/temporal/global-setup.ts'],
          testTimeout: 7_200_000,
          hookTimeout: 180_000,
          fileParallelism: false,
        },
      },
      {
        // the files that need the machine to themselves (HEAVY): run on their own, after the others (npm test)
        extends: true,
        test: {
          name: 'heavy',
          include: HEAVY,
          globalSetup: ['test/temporal/global-setup.ts'],
          testTimeout: 1_800_000,
          hookTimeout: 180_000,
          // one file at a time: side by side, the 2,000-turn run's workflow thread once died of a Node fatal error
          // ("async hook stack has become corrupted") with both files and the cores saturated; each passes alone
          fileParallelism: false,
        },
      },
    ],
  },
});
