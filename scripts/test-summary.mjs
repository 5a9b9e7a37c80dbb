// Prints vitest's JSON results as one plain closing line: "N passed, N failed, N skipped".
import { existsSync, readFileSync } from 'node:fs';

const file = process.argv[2] ?? '.keel/test-results.json';
if (!existsSync(file)) {
  console.log(`no test results at ${file}`);
  process.exit(1);
}
const r = JSON.parse(readFileSync(file, 'utf8'));
console.log(`${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + (r.numTodoTests ?? 0)} skipped`);
