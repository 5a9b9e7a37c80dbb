/**
 * `BENCH_WRITE_DOCS=1 npm run bench`: puts this run's Markdown report into docs/performance.md between the markers
 * `<!-- bench:start -->` and `<!-- bench:end -->`, so the guide shows a run's table as the bench printed it (regenerated,
 * never hand-copied). A run of some sections only (`BENCH_ONLY`) is refused: the guide's table is a whole run's.
 */
import { readFileSync, writeFileSync } from 'node:fs';

export const START = '<!-- bench:start -->';
export const END = '<!-- bench:end -->';

/**
 * `doc` with the text between the markers replaced by `report`, its headings two levels down (the report's `# Keel
 * bench` sits under the guide's own `##`); throws when the markers are missing.
 */
export function withReport(doc: string, report: string): string {
  const from = doc.indexOf(START);
  const to = doc.indexOf(END);
  if (from === -1 || to < from) throw new Error(`docs/performance.md has no ${START} … ${END} section`);
  const body = report.trim().replace(/^(#{1,4}) /gm, '##$1 ');
  return `${doc.slice(0, from + START.length)}\n\n${body}\n\n${doc.slice(to)}`;
}

/**
 * Writes `report` into the guide at `path` (see above), formatted as `npm test`'s format check wants it (prettier with
 * the project's settings); `whole`: every section ran.
 */
export async function writeDocs(path: string, report: string, whole: boolean): Promise<string> {
  if (!whole) return 'BENCH_WRITE_DOCS: not written, BENCH_ONLY ran some sections only (the guide shows a whole run)';
  const prettier = await import('prettier');
  const text = withReport(readFileSync(path, 'utf8'), report);
  writeFileSync(path, await prettier.format(text, { ...(await prettier.resolveConfig(path)), filepath: path }));
  return `BENCH_WRITE_DOCS: wrote this run's report into ${path}`;
}
