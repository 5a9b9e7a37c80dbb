import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    setupFiles: ['test/print-node-version.ts'],
    projects: [
      {
        extends: true,
        test: { name: 'unit', include: ['test/unit/**/*.test.ts'], testTimeout: 30_000 },
      },
      {
        extends: true,
        test: {
          name: 'temporal',
          include: ['test/temporal/**/*.test.ts'],
          exclude: ['test/temporal/batch.test.ts', 'test/temporal/large-transcript.test.ts'],
          globalSetup: ['test/temporal/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
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
        // CPU-bound (thousands of child workflows on 2 cores): run on its own, after the others (npm test)
        extends: true,
        test: {
          name: 'heavy',
          include: ['test/temporal/batch.test.ts', 'test/temporal/large-transcript.test.ts'],
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
