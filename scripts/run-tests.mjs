#!/usr/bin/env node
// `npm test`: the Temporal CLI, then the front checks (type check, lint, format, links) beside the `unit` and
// `temporal` projects, then the `heavy` project alone (docs/development.md#test-run). Every phase runs even
// when an earlier one failed, so one run shows every failure; the exit code is 1 when any phase failed. Results:
// .keel/test-results.json, .keel/test-results-heavy.json, and what failed outside any test in .keel/test-errors-*.json
// (scripts/test-summary.mjs prints them all).
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync } from 'node:fs';

mkdirSync('.keel', { recursive: true });
for (const f of readdirSync('.keel', { withFileTypes: true }).filter((d) => d.isFile()))
  if (/^test-(results|errors)(-.*)?\.json$/.test(f.name) && f.name !== 'test-results-cluster.json')
    rmSync(`.keel/${f.name}`, { force: true });

const vitest = (projects, output) => [
  'node_modules/vitest/vitest.mjs',
  'run',
  ...projects.flatMap((p) => ['--project', p]),
  '--reporter=default',
  '--reporter=json',
  '--reporter=./scripts/test-errors-reporter.mjs',
  `--outputFile.json=${output}`,
];
// the front checks burn CPU while the unit and temporal files mostly wait: they run beside that phase
// (scripts/front-checks.mjs --beside; its exit code is 1 when either failed)
const phases = [
  ['Temporal CLI', ['scripts/temporal-cli.mjs', '--quiet-if-ready']],
  [
    'front checks + unit + temporal',
    [
      'scripts/front-checks.mjs',
      '--beside',
      process.execPath,
      ...vitest(['unit', 'temporal'], '.keel/test-results.json'),
    ],
  ],
  ['heavy', vitest(['heavy'], '.keel/test-results-heavy.json')],
];
const failed = [];
for (const [name, args] of phases) {
  const r = spawnSync(process.execPath, args, { stdio: 'inherit' });
  if (r.status !== 0) {
    failed.push(`${name} (exit ${r.status ?? r.signal})`);
    if (name === 'Temporal CLI') break; // the suites need it
  }
}
if (failed.length) console.log(`[test] failed: ${failed.join(', ')}`);
process.exit(failed.length ? 1 : 0);
