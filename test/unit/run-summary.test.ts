/** The static summary of a run (common/run-summary.ts), as AgentClient.start and the batch's children set it. */
import { describe, expect, it } from 'vitest';
import { runSummary } from '../../common/run-summary.js';

const input = (prompt?: unknown) => ({ model: 'scripted/x', ...(prompt === undefined ? {} : { prompt }) }) as never;

describe('runSummary', () => {
  it("is the prompt's first line, with the batch's `#<index>` label when given", () => {
    expect(runSummary(input('Triage ticket 42\nand more'))).toBe('Triage ticket 42');
    expect(runSummary(input('Triage ticket 42\nand more'), '#7')).toBe('#7 Triage ticket 42');
    expect(runSummary(input(['first', 'second']))).toBe('first');
    expect(runSummary(input([{ role: 'user', content: 'hi' }]), '#0')).toBe('#0 "hi"');
    expect(runSummary(input(), '#1')).toBe('#1 (continue)');
    expect(runSummary(input([]), '#2')).toBe('#2 (continue)');
  });

  it('cuts a line over 120 characters to 119 and an ellipsis, label included', () => {
    expect(runSummary(input('x'.repeat(200)))).toBe(`${'x'.repeat(119)}…`);
    expect(runSummary(input('x'.repeat(200)), '#12')).toBe(`#12 ${'x'.repeat(115)}…`);
    expect(runSummary(input('x'.repeat(120)))).toBe('x'.repeat(120));
  });
});
