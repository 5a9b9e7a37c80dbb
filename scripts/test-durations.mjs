// Writes test/file-durations.json — each test file's wall time in seconds, from vitest's JSON results of a whole run
// (`npm test` writes .keel/test-results.json and .keel/test-results-heavy.json) — for test/longest-first.ts, which
// starts the longest files first. Without it a fresh clone (no vitest cache) starts the largest files first, and a
// short file that waits long (the replay corpus, a worker-kill test) can end up last, alone, stretching the run.
// Run after a whole `npm test` on a quiet machine: `node scripts/test-durations.mjs`; commit the file.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';

const inputs = process.argv.slice(2).length
  ? process.argv.slice(2)
  : ['.keel/test-results.json', '.keel/test-results-heavy.json'];
const durations = {};
for (const input of inputs.filter((f) => existsSync(f)))
  for (const file of JSON.parse(readFileSync(input, 'utf8')).testResults ?? [])
    durations[file.name.replace(process.cwd() + '/', '')] = Math.round((file.endTime - file.startTime) / 100) / 10;
if (!Object.keys(durations).length) {
  console.error(`no results in ${inputs.join(', ')}: run \`npm test\` first`);
  process.exit(1);
}
const sorted = Object.fromEntries(Object.entries(durations).sort(([a], [b]) => a.localeCompare(b)));
writeFileSync('test/file-durations.json', JSON.stringify(sorted, null, 2) + '\n');
console.log(`test/file-durations.json: ${Object.keys(sorted).length} files`);
