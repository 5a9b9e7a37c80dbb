// Prints vitest's JSON results (one or more files): each failed test (file, name, first lines of its error), each
// error outside any test (a file failed as a whole, an unhandled error: .keel/test-errors-*.json, written by
// scripts/test-errors-reporter.mjs — vitest then fails the run with every test passed), the slowest test files (where
// the run's time goes: docs/development.md#test-run), then one plain closing line
// "N passed, N failed, N skipped" (", N errors outside tests" when there are any).
import { existsSync, readdirSync, readFileSync } from 'node:fs';

const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ['.keel/test-results.json', '.keel/test-results-heavy.json'];
let passed = 0;
let failed = 0;
let skipped = 0;
let read = 0;
const failures = [];
const durations = [];
for (const file of files) {
  if (!existsSync(file)) continue;
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
  read += 1;
  for (const file of r.testResults ?? []) {
    durations.push([file.name.replace(process.cwd() + '/', ''), (file.endTime - file.startTime) / 1000]);
    for (const t of file.assertionResults ?? [])
      if (t.status === 'failed')
        failures.push(
          `FAILED ${file.name.replace(process.cwd() + '/', '')} > ${t.fullName}\n  ${(t.failureMessages?.[0] ?? '').split('\n').slice(0, 3).join('\n  ')}`,
        );
  }
}
if (read === 0) {
  console.log(`no test results in ${files.join(', ')}`);
  process.exit(1);
}
const outside = existsSync('.keel')
  ? readdirSync('.keel')
      .filter((f) => /^test-errors-.*\.json$/.test(f))
      .flatMap((f) => JSON.parse(readFileSync(`.keel/${f}`, 'utf8')))
  : [];
for (const f of failures) console.log(f);
for (const e of outside)
  console.log(
    `ERROR outside any test (${e.kind === 'file' ? 'the file failed as a whole' : 'unhandled'}) in ${e.where.replace(process.cwd() + '/', '')}\n  ${e.message.split('\n').join('\n  ')}`,
  );
const slowest = durations.filter(([, s]) => s > 0).sort((a, b) => b[1] - a[1]);
if (slowest.length)
  console.log(
    `slowest files: ${slowest
      .slice(0, 12)
      .map(([name, s]) => `${name} ${s.toFixed(0)} s`)
      .join(', ')}`,
  );
console.log(
  `${passed} passed, ${failed} failed, ${skipped} skipped${outside.length ? `, ${outside.length} errors outside tests` : ''}`,
);
