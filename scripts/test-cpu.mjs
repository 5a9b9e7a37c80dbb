// Sums the CPU seconds test files spent (test/cpu-per-file.ts writes them when the run had KEEL_TEST_CPU=<dir>):
// `KEEL_TEST_CPU=.keel/test-cpu npm test && node scripts/test-cpu.mjs .keel/test-cpu` — the most expensive first.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

const dir = process.argv[2] ?? '.keel/test-cpu';
const rows = readFileSync(join(dir, 'cpu.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map((l) => JSON.parse(l))
  .map((r) => ({ ...r, total: r.own + r.children }))
  .sort((a, b) => b.total - a.total);
const sum = (k) => rows.reduce((s, r) => s + r[k], 0);
console.log(
  `${rows.length} files: ${sum('total').toFixed(0)} CPU s (own ${sum('own').toFixed(0)}, children ${sum('children').toFixed(0)}), ${sum('wall').toFixed(0)} s of file wall time`,
);
for (const r of rows.slice(0, Number(process.argv[3] ?? 40)))
  console.log(
    `${r.total.toFixed(1).padStart(7)} CPU s (own ${r.own.toFixed(1)}, children ${r.children.toFixed(1)}) ${r.wall.toFixed(0).padStart(4)} s  ${r.file}`,
  );
