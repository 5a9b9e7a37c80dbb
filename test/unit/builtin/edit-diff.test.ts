/**
 * Issue 33 item 3: `edit`'s diff is bounded (activities/tools/builtin/edit-diff.ts `lineChanges`). A normal edit gets
 * the minimal diff and the same patch as `diff`'s own `structuredPatch` + `formatPatch`; an edit that changes more than
 * MAX_DIFF_EDIT_LINES lines shows its changed region whole (every old line of it removed, then every new line added),
 * still an exact patch; replacing 4,000 lines leaves the event loop free (0.6.2: 4.1 s with the loop stopped).
 */
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { applyPatch, FILE_HEADERS_ONLY, formatPatch, structuredPatch } from 'diff';
import { describe, expect, it } from 'vitest';
import type { EditToolDetails } from '../../../activities/tools/builtin/edit.js';
import {
  generateDiffString,
  generatePatch,
  lineChanges,
  MAX_DIFF_EDIT_LINES,
} from '../../../activities/tools/builtin/edit-diff.js';
import { run, tempDir, text, tools } from './helpers.js';

/** `diff`'s own patch of the same texts (what generatePatch returned before it was bounded). */
const jsdiffPatch = (p: string, a: string, b: string) =>
  formatPatch(structuredPatch(p, p, a, b, undefined, undefined, { context: 4 }), FILE_HEADERS_ONLY);

/** A small deterministic generator, so a failure can be replayed. */
function random(seed: number): () => number {
  let s = seed;
  return () => {
    s = (s * 1103515245 + 12345) % 2 ** 31;
    return s / 2 ** 31;
  };
}

/** `n` lines `<tag> <i>` (and some repeated lines, so the diff has choices to make), joined with `\n`. */
const lines = (n: number, tag: string) => Array.from({ length: n }, (_, i) => (i % 7 === 3 ? '}' : `${tag} line ${i}`));

describe('edit diff: normal edits', () => {
  it('the patch is the one `diff` makes, for 400 random edits (insertions, deletions, files without a last newline)', () => {
    const next = random(33);
    for (let round = 0; round < 400; round++) {
      const before = lines(1 + Math.floor(next() * 60), 'a');
      const after = [...before];
      for (let k = Math.floor(next() * 5); k >= 0; k--) {
        const at = Math.floor(next() * (after.length + 1));
        const cut = Math.floor(next() * 4);
        const add = Array.from({ length: Math.floor(next() * 4) }, (_, j) =>
          next() < 0.3 ? '}' : `new ${round} ${j}`,
        );
        after.splice(at, cut, ...add);
      }
      const end = (ls: string[]) => ls.join('\n') + (next() < 0.8 ? '\n' : '');
      const [a, b] = [end(before), end(after)];
      if (a === b) continue;
      expect(lineChanges(a, b).minimal).toBe(true);
      expect(generatePatch('f.txt', a, b)).toBe(jsdiffPatch('f.txt', a, b));
      expect(applyPatch(a, generatePatch('f.txt', a, b))).toBe(b);
    }
  });

  it('a small edit in a 20,000-line file: the minimal diff, exact', () => {
    const before = lines(20_000, 'x');
    const after = [...before];
    after.splice(10_000, 2, 'changed A', 'changed B', 'added C');
    const [a, b] = [before.join('\n') + '\n', after.join('\n') + '\n'];
    const { diff, firstChangedLine } = generateDiffString(a, b);
    expect(firstChangedLine).toBe(10_001);
    expect(diff).toBe(
      [
        '       ...',
        '  9997 x line 9996',
        '  9998 x line 9997',
        '  9999 x line 9998',
        ' 10000 }',
        '-10001 x line 10000',
        '-10002 x line 10001',
        '+10001 changed A',
        '+10002 changed B',
        '+10003 added C',
        ' 10003 x line 10002',
        ' 10004 x line 10003',
        ' 10005 x line 10004',
        ' 10006 x line 10005',
        '       ...',
      ].join('\n'),
    );
    expect(generatePatch('big.txt', a, b)).toBe(jsdiffPatch('big.txt', a, b));
  });
});

describe('edit diff: bounded', () => {
  it(`over ${MAX_DIFF_EDIT_LINES} changed lines, the changed region is shown whole: old lines removed, then new ones added`, () => {
    // every other line changes: the minimal diff would keep the 200 unchanged ones in between
    const before = ['head 1', 'head 2', ...Array.from({ length: 400 }, (_, i) => `row ${i}`), 'tail'];
    const after = before.map((l, i) => (i >= 2 && i < 402 && i % 2 === 0 ? `ROW ${i - 2}` : l));
    const [a, b] = [before.join('\n') + '\n', after.join('\n') + '\n'];
    const { changes, minimal } = lineChanges(a, b);
    expect(minimal).toBe(false);
    // from the first changed line (3: "row 0") to the last (401: "row 398"); "row 399" and "tail" are kept
    expect(changes.map((c) => [c.added ? '+' : c.removed ? '-' : ' ', c.count])).toEqual([
      [' ', 2],
      ['-', 399],
      ['+', 399],
      [' ', 2],
    ]);
    const removed = before.slice(2, 401).map((l, i) => `-${String(3 + i).padStart(3, ' ')} ${l}`);
    const added = after.slice(2, 401).map((l, i) => `+${String(3 + i).padStart(3, ' ')} ${l}`);
    expect(generateDiffString(a, b)).toEqual({
      diff: ['   1 head 1', '   2 head 2', ...removed, ...added, ' 402 row 399', ' 403 tail'].join('\n'),
      firstChangedLine: 3,
    });
    const patch = generatePatch('rows.txt', a, b);
    expect(patch).toBe(
      [
        '--- rows.txt',
        '+++ rows.txt',
        '@@ -1,403 +1,403 @@',
        ' head 1',
        ' head 2',
        ...before.slice(2, 401).map((l) => `-${l}`),
        ...after.slice(2, 401).map((l) => `+${l}`),
        ' row 399',
        ' tail',
        '',
      ].join('\n'),
    );
    expect(applyPatch(a, patch)).toBe(b);
  });

  it('a file without a last newline, changed at its end: "\\ No newline at end of file" as `diff` writes it', () => {
    const a = Array.from({ length: 400 }, (_, i) => `a${i}`).join('\n');
    const b = Array.from({ length: 400 }, (_, i) => `b${i}`).join('\n');
    expect(lineChanges(a, b).minimal).toBe(false);
    const patch = generatePatch('n.txt', a, b);
    expect(patch.split('\n').slice(0, 3)).toEqual(['--- n.txt', '+++ n.txt', '@@ -1,400 +1,400 @@']);
    // the header's 3 lines, then the 400 removed lines: "a399" is line 403
    expect(patch.split('\n').slice(402, 407)).toEqual(['-a399', '\\ No newline at end of file', '+b0', '+b1', '+b2']);
    expect(patch.endsWith('+b399\n\\ No newline at end of file\n')).toBe(true);
    expect(applyPatch(a, patch)).toBe(b);
  });

  it('the edit tool replaces 4,000 lines with the event loop free (p99 ≤ 100 ms), and its result shows the region whole', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'big.ts');
    const head = Array.from({ length: 50 }, (_, i) => `// header ${i}`);
    const old = Array.from({ length: 4000 }, (_, i) => `const old${i} = ${i};`);
    const neu = Array.from({ length: 4000 }, (_, i) => `const new${i} = ${i * 2};`);
    const tail = Array.from({ length: 50 }, (_, i) => `// footer ${i}`);
    writeFileSync(file, [...head, ...old, ...tail].join('\n') + '\n');
    const delay = monitorEventLoopDelay({ resolution: 10 });
    delay.enable();
    await new Promise((resolve) => setTimeout(resolve, 50)); // the monitor's timer runs from the next turn on
    const started = performance.now();
    const result = await run<EditToolDetails>(tools(dir).edit, {
      path: file,
      edits: [{ oldText: old.join('\n'), newText: neu.join('\n') }],
    });
    const took = performance.now() - started;
    await new Promise((resolve) => setTimeout(resolve, 50));
    delay.disable();
    const ms = (ns: number) => Math.round(ns / 1e6);
    console.log(
      `[edit-diff] 4,000-line replacement: ${took.toFixed(0)} ms, event-loop delay p99 ${ms(delay.percentile(99))} ms, max ${ms(delay.max)} ms`,
    );
    expect(ms(delay.percentile(99))).toBeLessThanOrEqual(100);
    expect(took).toBeLessThan(2000);
    expect(text(result)).toBe(`Successfully replaced 1 block(s) in ${file}.`);
    expect(readFileSync(file, 'utf8')).toBe([...head, ...neu, ...tail].join('\n') + '\n');
    const num = (n: number) => String(n).padStart(4, ' ');
    const details = result.details!;
    expect(details.firstChangedLine).toBe(51);
    expect(details.diff).toBe(
      [
        '      ...',
        ...head.slice(46).map((l, i) => ` ${num(47 + i)} ${l}`),
        ...old.map((l, i) => `-${num(51 + i)} ${l}`),
        ...neu.map((l, i) => `+${num(51 + i)} ${l}`),
        ...tail.slice(0, 4).map((l, i) => ` ${num(4051 + i)} ${l}`),
        '      ...',
      ].join('\n'),
    );
    expect(details.patch).toBe(
      [
        `--- ${file}`,
        `+++ ${file}`,
        '@@ -47,4008 +47,4008 @@',
        ...head.slice(46).map((l) => ` ${l}`),
        ...old.map((l) => `-${l}`),
        ...neu.map((l) => `+${l}`),
        ...tail.slice(0, 4).map((l) => ` ${l}`),
        '',
      ].join('\n'),
    );
  });
});
