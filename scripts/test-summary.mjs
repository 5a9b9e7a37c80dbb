// Prints vitest's JSON results (one or more files): each failed test (file, name, first lines of its error), then one
// plain closing line "N passed, N failed, N skipped".
import { existsSync, readFileSync } from 'node:fs';

const files = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ['.keel/test-results.json', '.keel/test-results-heavy.json'];
let passed = 0;
let failed = 0;
let skipped = 0;
let read = 0;
const failures = [];
for (const file of files) {
  if (!existsSync(file)) continue;
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + (r.numTodoTests ?? 0);
  read += 1;
  for (const file of r.testResults ?? [])
    for (const t of file.assertionResults ?? [])
      if (t.status === 'failed')
        failures.push(
          `FAILED ${file.name.replace(process.cwd() + '/', '')} > ${t.fullName}\n  ${(t.failureMessages?.[0] ?? '').split('\n').slice(0, 3).join('\n  ')}`,
        );
}
if (read === 0) {
  console.log(`no test results in ${files.join(', ')}`);
  process.exit(1);
}
for (const f of failures) console.log(f);
console.log(`${passed} passed, ${failed} failed, ${skipped} skipped`);
