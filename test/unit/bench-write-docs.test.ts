import { describe, expect, it } from 'vitest';
import { END, START, withReport } from '../../bench/write-docs.js';

describe('BENCH_WRITE_DOCS puts a run report between the markers of docs/performance.md', () => {
  it("replaces only what stands between the markers, the report's headings two levels down", () => {
    const doc = `# Performance\n\nintro\n\n${START}\n\nold table\n\n${END}\n\nafter\n`;
    expect(withReport(doc, '# Keel bench\n\n| a | b |\n\n## Targets\n\n- met\n')).toBe(
      `# Performance\n\nintro\n\n${START}\n\n### Keel bench\n\n| a | b |\n\n#### Targets\n\n- met\n\n${END}\n\nafter\n`,
    );
  });

  it('a guide without the markers is an error naming them', () => {
    expect(() => withReport('# Performance\n', 'x')).toThrow(
      'docs/performance.md has no <!-- bench:start --> … <!-- bench:end --> section',
    );
  });
});
