import { spawnSync } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { applyPatch } from 'diff';
import { describe, expect, it } from 'vitest';
import {
  computeEditsDiff,
  createEditTool,
  type EditToolDetails,
  prepareEditArguments,
} from '../../../activities/tools/builtin/edit.js';
import { Workspace } from '../../../activities/tools/builtin/paths.js';
import { errorOf, isRoot, run, tempDir, text, tools } from './helpers.js';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

function setup(content: string, name = 'file.txt') {
  const dir = tempDir();
  const file = path.join(dir, name);
  writeFileSync(file, content);
  return { dir, file, edit: tools(dir).edit };
}

async function editOk(content: string, edits: { oldText: string; newText: string }[]) {
  const { dir, file, edit } = setup(content);
  const result = await run<EditToolDetails>(edit, { path: file, edits });
  return { dir, file, result, after: readFileSync(file, 'utf-8') };
}

/**
 * Runs an edit as the unprivileged user `nobody` (the tests run as root in CI, and root passes every permission check).
 * Returns the rejection message.
 */
function editAsNobody(file: string, preview: boolean): string {
  const script = `
    import { createEditTool, computeEditsDiff } from ${JSON.stringify(path.join(repoRoot, 'activities/tools/builtin/edit.ts'))};
    import { Workspace } from ${JSON.stringify(path.join(repoRoot, 'activities/tools/builtin/paths.ts'))};
    const workspace = new Workspace(${JSON.stringify(path.dirname(file))});
    const edits = [{ oldText: 'a', newText: 'b' }];
    if (${preview}) {
      const r = await computeEditsDiff(${JSON.stringify(file)}, edits, { workspace });
      process.stdout.write(JSON.stringify(r));
    } else {
      try {
        await createEditTool({ workspace }).execute('id', { path: ${JSON.stringify(file)}, edits }, new AbortController().signal, () => {}, {});
        process.stdout.write(JSON.stringify({ ok: true }));
      } catch (e) { process.stdout.write(JSON.stringify({ error: e.message })); }
    }`;
  const res = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: repoRoot,
    uid: 65534,
    gid: 65534,
    encoding: 'utf-8',
    env: { ...process.env, HOME: '/tmp' },
  });
  if (res.status !== 0) throw new Error(`child failed: ${res.stderr}`);
  return JSON.parse(res.stdout).error;
}

describe('edit (C.3)', () => {
  it('C.8-15 replaces text and returns diff and patch', async () => {
    const { file, result, after } = await editOk('Hello, world!', [{ oldText: 'world', newText: 'testing' }]);
    expect(text(result)).toBe(`Successfully replaced 1 block(s) in ${file}.`);
    expect(after).toBe('Hello, testing!');
    const details = result.details!;
    expect(details.diff).toContain('testing');
    expect(details.diff).toBe('-1 Hello, world!\n+1 Hello, testing!');
    expect(details.firstChangedLine).toBe(1);
    for (const part of ['--- ', '+++ ', '@@', '-Hello, world!', '+Hello, testing!'])
      expect(details.patch).toContain(part);
    expect(details.patch.startsWith(`--- ${file}\n+++ ${file}\n@@`)).toBe(true);
    expect(applyPatch('Hello, world!', details.patch)).toBe('Hello, testing!');
  });

  it('C.8-16 missing oldText rejects', async () => {
    const { file, edit } = setup('Hello, world!');
    await expect(run(edit, { path: file, edits: [{ oldText: 'nonexistent', newText: 'x' }] })).rejects.toThrow(
      /Could not find the exact text/,
    );
  });

  it('C.8-17 not-found error shows the start of the file', async () => {
    const { file, edit } = setup('alpha\nbeta\ngamma\ndelta\n');
    const message = await errorOf(run(edit, { path: file, edits: [{ oldText: 'nonexistent', newText: 'x' }] }));
    expect(message).toBe(
      `Could not find the exact text in ${file}. The old text must match exactly including all whitespace and newlines.\n` +
        'File starts with:\n  1: alpha\n  2: beta\n  3: gamma\n  4: delta',
    );
  });

  it('C.8-18 not-found context keeps the original spacing', async () => {
    const { file, edit } = setup('//  Talks\nconst x = 1;\n//  More\n');
    const message = await errorOf(
      run(edit, { path: file, edits: [{ oldText: '// Talks\nconst x = 1;', newText: 'x' }] }),
    );
    expect(message).toContain('Could not find');
    expect(message).toContain('  1: //  Talks');
  });

  it('not-found context finds the closest line by prefix', async () => {
    const { file, edit } = setup('one\ntwo\nfunction computeTotals(items) {\n  return 1;\n}\nsix\nseven\neight\n');
    const message = await errorOf(
      run(edit, { path: file, edits: [{ oldText: 'function computeTotals(list) {\n  return 2;', newText: 'x' }] }),
    );
    expect(message).toBe(
      `Could not find the exact text in ${file}. The old text must match exactly including all whitespace and newlines.\n` +
        'Closest match is around line 3:\n  1: one\n  2: two\n  3: function computeTotals(items) {\n  4:   return 1;\n  5: }\n  6: six',
    );
  });

  it('not-found context for a blank first oldText line reads "File is empty." (reference quirk); none for an empty file', async () => {
    const { file, edit } = setup('alpha\n');
    expect(await errorOf(run(edit, { path: file, edits: [{ oldText: '\nmissing', newText: 'x' }] }))).toBe(
      `Could not find the exact text in ${file}. The old text must match exactly including all whitespace and newlines.\nFile is empty.`,
    );
    const empty = setup('');
    expect(await errorOf(run(empty.edit, { path: empty.file, edits: [{ oldText: 'missing', newText: 'x' }] }))).toBe(
      `Could not find the exact text in ${empty.file}. The old text must match exactly including all whitespace and newlines.`,
    );
  });

  it('C.8-19 missing file rejects with the access error', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'nope.txt');
    expect(await errorOf(run(tools(dir).edit, { path: file, edits: [{ oldText: 'a', newText: 'b' }] }))).toBe(
      `Could not edit file: ${file}. Error code: ENOENT.`,
    );
  });

  it('C.8-20 duplicate occurrences reject', async () => {
    const { file, edit } = setup('foo foo foo');
    expect(await errorOf(run(edit, { path: file, edits: [{ oldText: 'foo', newText: 'bar' }] }))).toBe(
      `Found 3 occurrences of the text in ${file}. The text must be unique. Please provide more context to make it unique.`,
    );
  });

  it('C.8-21 applies two disjoint edits', async () => {
    const { file, result, after } = await editOk('alpha\nbeta\ngamma\ndelta\n', [
      { oldText: 'alpha\n', newText: 'ALPHA\n' },
      { oldText: 'gamma\n', newText: 'GAMMA\n' },
    ]);
    expect(text(result)).toBe(`Successfully replaced 2 block(s) in ${file}.`);
    expect(after).toBe('ALPHA\nbeta\nGAMMA\ndelta\n');
    expect(result.details!.diff).toContain('ALPHA');
    expect(result.details!.diff).toContain('GAMMA');
  });

  it('C.8-22 diff collapses long unchanged stretches', async () => {
    const content = `${Array.from({ length: 600 }, (_, i) => `line ${i + 1}`).join('\n')}\n`;
    const { result } = await editOk(content, [
      { oldText: 'line 100\n', newText: 'changed 100\n' },
      { oldText: 'line 300\n', newText: 'changed 300\n' },
      { oldText: 'line 500\n', newText: 'changed 500\n' },
    ]);
    const diff = result.details!.diff;
    for (const s of ['changed 100', 'changed 300', 'changed 500', '...']) expect(diff).toContain(s);
    expect(diff).not.toContain('line 250');
    expect(diff.split('\n').length).toBeLessThan(50);
    expect(result.details!.firstChangedLine).toBe(100);
  });

  it('C.8-23 edits are matched against the original content', async () => {
    const { after } = await editOk('foo\nbar\nbaz\n', [
      { oldText: 'foo\n', newText: 'foo bar\n' },
      { oldText: 'bar\n', newText: 'BAR\n' },
    ]);
    expect(after).toBe('foo bar\nBAR\nbaz\n');
  });

  it('C.8-24 empty edits reject', async () => {
    const { file, edit } = setup('x');
    expect(await errorOf(run(edit, { path: file, edits: [] }))).toBe(
      'Edit tool input is invalid. edits must contain at least one replacement.',
    );
  });

  it('C.8-25 overlapping edits reject', async () => {
    const { file, edit } = setup('one\ntwo\nthree\n');
    expect(
      await errorOf(
        run(edit, {
          path: file,
          edits: [
            { oldText: 'one\ntwo\n', newText: 'x' },
            { oldText: 'two\nthree\n', newText: 'y' },
          ],
        }),
      ),
    ).toBe(`edits[0] and edits[1] overlap in ${file}. Merge them into one edit or target disjoint regions.`);
  });

  it('C.8-26 one missing edit leaves the file untouched', async () => {
    const { file, edit } = setup('alpha\nbeta\n');
    const message = await errorOf(
      run(edit, {
        path: file,
        edits: [
          { oldText: 'alpha', newText: 'ALPHA' },
          { oldText: 'missing', newText: 'x' },
        ],
      }),
    );
    expect(message).toMatch(
      /^Could not find edits\[1\] in .*\. The old text must match exactly including all whitespace and newlines\.\n/,
    );
    expect(readFileSync(file, 'utf-8')).toBe('alpha\nbeta\n');
  });

  it.skipIf(isRoot)('C.8-27 read-only file rejects with EACCES', async () => {
    const { file, edit } = setup('a');
    chmodSync(file, 0o444);
    expect(await errorOf(run(edit, { path: file, edits: [{ oldText: 'a', newText: 'b' }] }))).toBe(
      `Could not edit file: ${file}. Error code: EACCES.`,
    );
  });

  it.runIf(isRoot)(
    'C.8-27 read-only file rejects with EACCES (as user nobody, since root bypasses permissions)',
    () => {
      const dir = tempDir();
      chmodSync(dir, 0o755);
      const file = path.join(dir, 'ro.txt');
      writeFileSync(file, 'a');
      chmodSync(file, 0o444);
      expect(editAsNobody(file, false)).toBe(`Could not edit file: ${file}. Error code: EACCES.`);
      expect(readFileSync(file, 'utf-8')).toBe('a');
    },
  );

  it('C.8-28 custom operations: an access error without code', async () => {
    const dir = tempDir();
    const tool = createEditTool({
      workspace: new Workspace(dir),
      operations: {
        access: async () => {
          throw new Error('disk offline');
        },
        readFile: async () => '',
        writeFile: async () => {},
      },
    });
    expect(await errorOf(run(tool, { path: 'broken.txt', edits: [{ oldText: 'a', newText: 'b' }] }))).toBe(
      'Could not edit file: broken.txt. Error: disk offline.',
    );
  });

  it('C.8-29 preview on a missing file', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'missing.txt');
    expect(await computeEditsDiff(file, [{ oldText: 'a', newText: 'b' }], { workspace: new Workspace(dir) })).toEqual({
      error: `Could not edit file: ${file}. Error code: ENOENT.`,
    });
  });

  it.skipIf(isRoot)('C.8-30 preview on a write-only file', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'wo.txt');
    writeFileSync(file, 'a');
    chmodSync(file, 0o222);
    expect(await computeEditsDiff(file, [{ oldText: 'a', newText: 'b' }], { workspace: new Workspace(dir) })).toEqual({
      error: `Could not edit file: ${file}. Error code: EACCES.`,
    });
  });

  it.runIf(isRoot)('C.8-30 preview on a write-only file (as user nobody, since root bypasses permissions)', () => {
    const dir = tempDir();
    chmodSync(dir, 0o755);
    const file = path.join(dir, 'wo.txt');
    writeFileSync(file, 'a');
    chmodSync(file, 0o222);
    expect(editAsNobody(file, true)).toBe(`Could not edit file: ${file}. Error code: EACCES.`);
  });

  it('C.8-31 preview with unmatched oldText', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'p.txt');
    writeFileSync(file, 'line one\nline two\n');
    const preview = await computeEditsDiff(file, [{ oldText: 'no such text', newText: 'x' }], {
      workspace: new Workspace(dir),
    });
    expect('error' in preview).toBe(true);
    const error = 'error' in preview ? preview.error : '';
    for (const s of ['Could not find', '  1: line one', '  2: line two']) expect(error).toContain(s);
  });

  it('preview returns the diff without writing', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'p.txt');
    writeFileSync(file, 'a\nb\n');
    expect(await computeEditsDiff(file, [{ oldText: 'b', newText: 'c' }], { workspace: new Workspace(dir) })).toEqual({
      diff: ' 1 a\n-2 b\n+2 c',
      firstChangedLine: 2,
    });
    expect(readFileSync(file, 'utf-8')).toBe('a\nb\n');
  });

  it('empty oldText and no-change errors', async () => {
    const { file, edit } = setup('same\nother\n');
    expect(await errorOf(run(edit, { path: file, edits: [{ oldText: '', newText: 'x' }] }))).toBe(
      `oldText must not be empty in ${file}.`,
    );
    expect(
      await errorOf(
        run(edit, {
          path: file,
          edits: [
            { oldText: 'same', newText: 'x' },
            { oldText: '', newText: 'y' },
          ],
        }),
      ),
    ).toBe(`edits[1].oldText must not be empty in ${file}.`);
    expect(await errorOf(run(edit, { path: file, edits: [{ oldText: 'same', newText: 'same' }] }))).toBe(
      `No changes made to ${file}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.`,
    );
    expect(
      await errorOf(
        run(edit, {
          path: file,
          edits: [
            { oldText: 'same', newText: 'same' },
            { oldText: 'other', newText: 'other' },
          ],
        }),
      ),
    ).toBe(`No changes made to ${file}. The replacements produced identical content.`);
    expect(
      await errorOf(
        run(edit, {
          path: file,
          edits: [
            { oldText: 'x', newText: 'y' },
            { oldText: 'e', newText: 'f' },
          ],
        }),
      ),
    ).toMatch(/^Could not find edits\[0\] in /);
    const dup = setup('ab cd ab\n');
    expect(
      await errorOf(
        run(dup.edit, {
          path: dup.file,
          edits: [
            { oldText: 'z', newText: '' },
            { oldText: 'ab', newText: 'c' },
          ],
        }),
      ),
    ).toMatch(/^Could not find edits\[0\]/);
    expect(
      await errorOf(
        run(dup.edit, {
          path: dup.file,
          edits: [
            { oldText: 'cd', newText: 'c' },
            { oldText: 'ab', newText: 'c' },
          ],
        }),
      ),
    ).toBe(
      `Found 2 occurrences of edits[1] in ${dup.file}. Each oldText must be unique. Please provide more context to make it unique.`,
    );
  });

  it('prepareArguments: JSON-string edits and legacy oldText/newText', () => {
    const edits = [{ oldText: 'a', newText: 'b' }];
    expect(prepareEditArguments({ path: 'f', edits: JSON.stringify(edits) })).toEqual({ path: 'f', edits });
    expect(prepareEditArguments({ path: 'f', oldText: 'x', newText: 'y' })).toEqual({
      path: 'f',
      edits: [{ oldText: 'x', newText: 'y' }],
    });
    expect(prepareEditArguments({ path: 'f', edits, oldText: 'x', newText: 'y' })).toEqual({
      path: 'f',
      edits: [...edits, { oldText: 'x', newText: 'y' }],
    });
    const untouched = { path: 'f', edits: '{"not":"an array"}' };
    expect(prepareEditArguments(untouched)).toBe(untouched);
    expect(prepareEditArguments('nonsense')).toBe('nonsense');
    expect(tools(tempDir()).edit.prepareArguments).toBe(prepareEditArguments);
  });
});

describe('edit fuzzy matching (C.3)', () => {
  it('C.8-59 trailing whitespace is ignored for matching', async () => {
    const { after } = await editOk('line one   \nline two  \nline three\n', [
      { oldText: 'line one\nline two\n', newText: 'replaced\n' },
    ]);
    expect(after).toBe('replaced\nline three\n');
  });

  it('C.8-60 full-width punctuation (NFKC), newText verbatim', async () => {
    const { after } = await editOk('你好，世界\n你好（世界）\n', [
      { oldText: '你好,世界', newText: '你好，pi' },
      { oldText: '你好(世界)', newText: '你好(pi)' },
    ]);
    expect(after).toBe('你好，pi\n你好(pi)\n');
  });

  it('C.8-61 NFKC: full-width letters/digits and combining accents', async () => {
    const { after } = await editOk('ＡＢＣ１２３\ncafe\u0301\n', [
      { oldText: 'ABC123\ncafé\n', newText: 'XYZ789\ncoffee\n' },
    ]);
    expect(after).toBe('XYZ789\ncoffee\n');
  });

  it('C.8-62 curly single quotes', async () => {
    const { after } = await editOk('console.log(\u2018hello\u2019);\n', [
      { oldText: "console.log('hello');", newText: "console.log('world');" },
    ]);
    expect(after).toContain('world');
  });

  it('C.8-63 curly double quotes', async () => {
    const { after } = await editOk('say(\u201CHello\u201D);\n', [
      { oldText: 'say("Hello");', newText: 'say("Goodbye");' },
    ]);
    expect(after).toBe('say("Goodbye");\n');
  });

  it('C.8-64 en/em dashes', async () => {
    const { after } = await editOk('range 10\u201350 \u2014 inclusive\n', [
      { oldText: 'range 10-50 - inclusive', newText: 'range 10-50 only' },
    ]);
    expect(after).toBe('range 10-50 only\n');
  });

  it('C.8-65 non-breaking space', async () => {
    const { after } = await editOk('hello\u00A0world\n', [{ oldText: 'hello world', newText: 'hello universe' }]);
    expect(after).toBe('hello universe\n');
  });

  it('C.8-66 exact match is preferred', async () => {
    const { after } = await editOk("const x = 'original';\nconst y = 'other';\n", [
      { oldText: "const x = 'original';", newText: "const x = 'changed';" },
    ]);
    expect(after).toBe("const x = 'changed';\nconst y = 'other';\n");
  });

  it('C.8-67 unrelated text still fails', async () => {
    const { file, edit } = setup('hello\u00A0world\n');
    await expect(run(edit, { path: file, edits: [{ oldText: 'goodbye moon', newText: 'x' }] })).rejects.toThrow(
      /Could not find the exact text/,
    );
  });

  it('C.8-68 fuzzy duplicates defeat exact uniqueness', async () => {
    const { file, edit } = setup('hello world   \nhello world\n');
    expect(await errorOf(run(edit, { path: file, edits: [{ oldText: 'hello world', newText: 'x' }] }))).toMatch(
      /^Found 2 occurrences/,
    );
    expect(readFileSync(file, 'utf-8')).toBe('hello world   \nhello world\n');
  });

  it('C.8-69 multi-edit with curly quotes and NBSP', async () => {
    const { after } = await editOk('console.log(\u2018hello\u2019);\nhello\u00A0world\n', [
      { oldText: "console.log('hello');", newText: "console.log('world');" },
      { oldText: 'hello world', newText: 'hello universe' },
    ]);
    expect(after).toBe("console.log('world');\nhello universe\n");
  });

  it('C.8-70 only touched lines are normalised; the patch reproduces the result', async () => {
    const original = 'replace me   \nafter   \n';
    const { after, result } = await editOk(original, [{ oldText: 'replace me\n', newText: 'after\n' }]);
    expect(after).toBe('after\nafter   \n');
    expect(applyPatch(original, result.details!.patch)).toBe(after);
  });

  it('C.8-71 fuzzy multi-edit keeps untouched lines byte for byte', async () => {
    const original = 'keep0  \na1   \na2   \nkeep1   \nb1 \nb2\t\nkeep2   \n';
    const { after, result } = await editOk(original, [
      { oldText: 'a1\na2', newText: 'A1\nA2' },
      { oldText: 'b1\nb2', newText: 'B1\nB2' },
    ]);
    expect(after).toBe('keep0  \nA1\nA2\nkeep1   \nB1\nB2\nkeep2   \n');
    expect(applyPatch(original, result.details!.patch)).toBe(after);
  });
});

describe('edit CRLF / BOM (C.3)', () => {
  it('C.8-72 LF oldText matches a CRLF file', async () => {
    const { result } = await editOk('line one\r\nline two\r\nline three\r\n', [
      { oldText: 'line one\nline two\n', newText: 'replaced\n' },
    ]);
    expect(text(result)).toContain('Successfully replaced');
  });

  it('C.8-73 CRLF endings are preserved', async () => {
    const { after } = await editOk('first\r\nsecond\r\nthird\r\n', [{ oldText: 'second', newText: 'REPLACED' }]);
    expect(after).toBe('first\r\nREPLACED\r\nthird\r\n');
  });

  it('C.8-74 LF endings are preserved', async () => {
    const { after } = await editOk('first\nsecond\nthird\n', [{ oldText: 'second', newText: 'REPLACED' }]);
    expect(after).toBe('first\nREPLACED\nthird\n');
  });

  it('C.8-75 duplicates across CRLF and LF regions are detected', async () => {
    const { file, edit } = setup('hello\r\nworld\r\n---\r\nhello\nworld\n');
    expect(await errorOf(run(edit, { path: file, edits: [{ oldText: 'hello\nworld\n', newText: 'x\n' }] }))).toMatch(
      /^Found 2 occurrences/,
    );
  });

  it('C.8-76 the BOM is preserved', async () => {
    const { after } = await editOk('\uFEFFfirst\r\nsecond\r\nthird\r\n', [{ oldText: 'second', newText: 'REPLACED' }]);
    expect(after).toBe('\uFEFFfirst\r\nREPLACED\r\nthird\r\n');
  });

  it('C.8-77 BOM + CRLF with two edits', async () => {
    const { after } = await editOk('\uFEFFfirst\r\nsecond\r\nthird\r\nfourth\r\n', [
      { oldText: 'second', newText: 'SECOND' },
      { oldText: 'fourth', newText: 'FOURTH' },
    ]);
    expect(after).toBe('\uFEFFfirst\r\nSECOND\r\nthird\r\nFOURTH\r\n');
  });
});
