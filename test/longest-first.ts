/**
 * vitest's sequencer for `npm test`: within each group and project (vitest's own order of those), the files that took
 * longest in a recorded whole run (test/file-durations.json, written by scripts/test-durations.mjs) start first; files
 * not in the record start before them (they may be long). vitest's default orders by its local cache of durations,
 * which a fresh clone does not have (CI): it then starts the largest files first, and a small file that waits long
 * could start last and run alone at the end. Timing only: which files run, and how, is unchanged.
 */
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const recorded = JSON.parse(readFileSync(new URL('./file-durations.json', import.meta.url), 'utf8')) as Record<
  string,
  number
>;

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const base = await super.sort(files);
    const groupOf = (s: TestSpecification) => `${s.project.config.sequence.groupOrder}\0${s.project.name}`;
    const groups = [...new Set(base.map(groupOf))];
    const seconds = (s: TestSpecification) =>
      recorded[relative(s.project.config.root, s.moduleId).replaceAll('\\', '/')] ?? Number.POSITIVE_INFINITY;
    const position = new Map(base.map((s, i) => [s, i]));
    return [...base].sort(
      (a, b) =>
        groups.indexOf(groupOf(a)) - groups.indexOf(groupOf(b)) ||
        seconds(b) - seconds(a) ||
        position.get(a)! - position.get(b)!,
    );
  }
}
