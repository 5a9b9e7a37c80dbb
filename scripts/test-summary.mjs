// Prints vitest's JSON results (one or more files): each failed test (file, name, first lines of its error), the
// slowest test files (where the run's time goes: docs/development.md#test-run), then one plain closing line
// "N passed, N failed, N skipped".
import { existsSync, readFileSync } from 'node:fs';

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
for (const f of failures) console.log(f);
const slowest = durations.filter(([, s]) => s > 0).sort((a, b) => b[1] - a[1]);
if (slowest.length)
  console.log(
    `slowest files: ${slowest
      .slice(0, 12)
      .map(([name, s]) => `${name} ${s.toFixed(0)} s`)
      .join(', ')}`,
  );
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
