/**
 * Matching, applying and diffing for the `edit` tool (Pi reference §C.3). Pure functions over strings, plus
 * {@link computeEditsDiff}, the preview that applies the same logic to a file without writing it.
 *
 * The diff is bounded ({@link lineChanges}): `diff`'s line diff (Myers) takes time about the square of the number of
 * lines it changes — replacing 4,000 lines took 4.1 s of the worker's event loop in 0.6.2 — so it may change at most
 * {@link MAX_DIFF_EDIT_LINES} lines and take at most {@link DIFF_TIMEOUT_MS}; past either, the changed region is shown
 * whole (every line of it removed, then every new line added), which is still an exact diff and patch of the edit.
 */
import { type Change, diffLines, FILE_HEADERS_ONLY, formatPatch, type StructuredPatchHunk } from 'diff';
import { splitLines } from './truncate.js';

export interface Edit {
  oldText: string;
  newText: string;
}

export type LineEnding = '\r\n' | '\n';

/** CRLF when the first "\n" is preceded by "\r". */
export function detectLineEnding(content: string): LineEnding {
  const lf = content.indexOf('\n');
  return lf > 0 && content[lf - 1] === '\r' ? '\r\n' : '\n';
}

/** CRLF and lone CR → LF. */
export function normalizeToLF(text: string): string {
  return text.replace(/\r\n/g, '\n').replace(/\r/g, '\n');
}

export function restoreLineEndings(text: string, ending: LineEnding): string {
  return ending === '\r\n' ? text.replace(/\n/g, '\r\n') : text;
}

export function stripBom(content: string): { bom: string; text: string } {
  return content.startsWith('\uFEFF') ? { bom: '\uFEFF', text: content.slice(1) } : { bom: '', text: content };
}

/**
 * Fuzzy-matching normal form: NFKC, trailing whitespace stripped per line, smart quotes → ASCII quotes, Unicode dashes
 * → "-", special spaces → " ". Keeps the number of lines.
 */
export function normalizeForFuzzyMatch(text: string): string {
  return text
    .normalize('NFKC')
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .replace(/[\u2018\u2019\u201A\u201B]/g, "'")
    .replace(/[\u201C\u201D\u201E\u201F]/g, '"')
    .replace(/[\u2010\u2011\u2012\u2013\u2014\u2015\u2212]/g, '-')
    .replace(/[\u00A0\u2002-\u200A\u202F\u205F\u3000]/g, ' ');
}

/** Non-overlapping occurrences of `needle` in `haystack`. */
export function countOccurrences(haystack: string, needle: string): number {
  if (!needle) return 0;
  let count = 0;
  for (let i = haystack.indexOf(needle); i !== -1; i = haystack.indexOf(needle, i + needle.length)) count++;
  return count;
}

/** Context appended to a "not found" error: the closest line found by prefixes of oldText's first line, or the file's start. */
export function notFoundContext(content: string, oldText: string): string {
  if (content === '') return '';
  const firstLine = oldText.split('\n')[0].trim();
  if (!firstLine) return 'File is empty.';
  const fileLines = splitLines(content);
  const oldLineCount = Math.max(1, splitLines(oldText).length);
  for (const length of [60, 50, 40, 30, 20, 10]) {
    const prefix = firstLine.slice(0, length);
    if (prefix.length < 10) continue;
    const index = fileLines.findIndex((line) => line.includes(prefix));
    if (index === -1) continue;
    const lineNumber = index + 1;
    const start = Math.max(1, lineNumber - 2);
    const end = Math.min(fileLines.length, lineNumber + oldLineCount - 1 + 2);
    const shown: string[] = [];
    for (let k = start; k <= end; k++) shown.push(`  ${k}: ${fileLines[k - 1]}`);
    return `Closest match is around line ${lineNumber}:\n${shown.join('\n')}`;
  }
  const head = fileLines.slice(0, 5).map((line, i) => `  ${i + 1}: ${line}`);
  return `File starts with:\n${head.join('\n')}`;
}

interface Match {
  editIndex: number;
  index: number;
  length: number;
}

/**
 * Applies every edit to `content` (LF, no BOM; edits already LF-normalised). Each edit is matched against the original
 * content. Throws an Error with Pi's exact text on any problem; nothing is partially applied.
 */
export function applyEdits(content: string, edits: Edit[], path: string): string {
  const multi = edits.length > 1;
  edits.forEach((edit, i) => {
    if (edit.oldText === '')
      throw new Error(
        multi ? `edits[${i}].oldText must not be empty in ${path}.` : `oldText must not be empty in ${path}.`,
      );
  });

  const fuzzy = !edits.every((edit) => content.includes(edit.oldText));
  const fuzzyContent = normalizeForFuzzyMatch(content);
  const base = fuzzy ? fuzzyContent : content;

  const matches: Match[] = edits.map((edit, i) => {
    const fuzzyOld = normalizeForFuzzyMatch(edit.oldText);
    const needle = fuzzy ? fuzzyOld : edit.oldText;
    const index = needle ? base.indexOf(needle) : -1;
    if (index === -1) {
      const head = multi
        ? `Could not find edits[${i}] in ${path}. The old text must match exactly including all whitespace and newlines.`
        : `Could not find the exact text in ${path}. The old text must match exactly including all whitespace and newlines.`;
      const context = notFoundContext(content, edit.oldText);
      throw new Error(context ? `${head}\n${context}` : head);
    }
    const occurrences = countOccurrences(fuzzyContent, fuzzyOld);
    if (occurrences > 1) {
      throw new Error(
        multi
          ? `Found ${occurrences} occurrences of edits[${i}] in ${path}. Each oldText must be unique. Please provide more context to make it unique.`
          : `Found ${occurrences} occurrences of the text in ${path}. The text must be unique. Please provide more context to make it unique.`,
      );
    }
    return { editIndex: i, index, length: needle.length };
  });

  const sorted = [...matches].sort((a, b) => a.index - b.index);
  for (let k = 1; k < sorted.length; k++) {
    const prev = sorted[k - 1];
    const cur = sorted[k];
    if (cur.index < prev.index + prev.length) {
      throw new Error(
        `edits[${prev.editIndex}] and edits[${cur.editIndex}] overlap in ${path}. Merge them into one edit or target disjoint regions.`,
      );
    }
  }

  const result = fuzzy ? applyFuzzy(content, fuzzyContent, sorted, edits) : splice(content, sorted, edits, 0);
  if (result === content) {
    throw new Error(
      multi
        ? `No changes made to ${path}. The replacements produced identical content.`
        : `No changes made to ${path}. The replacement produced identical content. This might indicate an issue with special characters or the text not existing as expected.`,
    );
  }
  return result;
}

/** Replaces the (sorted, disjoint) matches in `text`, whose offset 0 is at `offset` of the matched space. */
function splice(text: string, sorted: Match[], edits: Edit[], offset: number): string {
  let out = text;
  for (let k = sorted.length - 1; k >= 0; k--) {
    const m = sorted[k];
    const start = m.index - offset;
    out = out.slice(0, start) + edits[m.editIndex].newText + out.slice(start + m.length);
  }
  return out;
}

function lineStarts(text: string): number[] {
  const starts = [0];
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) starts.push(i + 1);
  return starts;
}

function lineOf(starts: number[], offset: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/**
 * Fuzzy application: matches are positions in the normalised text. Only the lines the matches touch are taken from the
 * normalised text (with the replacements applied); every other line keeps its original bytes.
 */
function applyFuzzy(content: string, normalized: string, sorted: Match[], edits: Edit[]): string {
  const nStarts = lineStarts(normalized);
  const oStarts = lineStarts(content);
  // Normalisation keeps lines one-to-one; if it ever did not, fall back to replacing in the normalised text.
  if (nStarts.length !== oStarts.length) return splice(normalized, sorted, edits, 0);

  const regionEnd = (starts: number[], text: string, line: number) =>
    line + 1 < starts.length ? starts[line + 1] : text.length;
  const regions: { first: number; last: number; matches: Match[] }[] = [];
  for (const m of sorted) {
    const first = lineOf(nStarts, m.index);
    const last = lineOf(nStarts, m.index + m.length - 1);
    const prev = regions[regions.length - 1];
    if (prev && first <= prev.last) {
      prev.last = Math.max(prev.last, last);
      prev.matches.push(m);
    } else {
      regions.push({ first, last, matches: [m] });
    }
  }
  let out = content;
  for (let r = regions.length - 1; r >= 0; r--) {
    const { first, last, matches } = regions[r];
    const nStart = nStarts[first];
    const nEnd = regionEnd(nStarts, normalized, last);
    const replaced = splice(normalized.slice(nStart, nEnd), matches, edits, nStart);
    out = out.slice(0, oStarts[first]) + replaced + out.slice(regionEnd(oStarts, content, last));
  }
  return out;
}

/**
 * Most lines the minimal line diff may change (removed plus added) before it gives up (`diff`'s `maxEditLength`).
 * Its work grows with the square of this: 300 lines is ~10 ms here, whatever the size of the file.
 */
export const MAX_DIFF_EDIT_LINES = 300;

/** Most ms the minimal line diff may take before it gives up (`diff`'s `timeout`): a guard for any other slow case. */
export const DIFF_TIMEOUT_MS = 50;

/**
 * The line changes from `oldContent` to `newContent`, as `diff`'s `diffLines` gives them (a line is a token with its
 * `\n`). `minimal`: `diffLines`' minimal diff, when it needs at most {@link MAX_DIFF_EDIT_LINES} changed lines and at
 * most {@link DIFF_TIMEOUT_MS}. Otherwise the changed region whole: the lines both texts start with and the lines they
 * end with are unchanged, every old line between them is removed and every new line between them added — still an
 * exact diff, only not the shortest; its cost is linear in the texts.
 */
export function lineChanges(oldContent: string, newContent: string): { changes: Change[]; minimal: boolean } {
  const region = changedRegion(oldContent, newContent);
  // a line of one side that the other side's region lacks must be removed or added: when there are more such lines
  // than the bound, the minimal diff would give up anyway, after ~300² steps (skipped, same result)
  if (mustChange(region) <= MAX_DIFF_EDIT_LINES) {
    const minimal = diffLines(oldContent, newContent, { maxEditLength: MAX_DIFF_EDIT_LINES, timeout: DIFF_TIMEOUT_MS });
    if (minimal) return { changes: minimal, minimal: true };
  }
  return { changes: regionChanges(region), minimal: false };
}

/** The two texts' lines and how many lines they start and end with alike (the region between them changed). */
interface Region {
  a: string[];
  b: string[];
  head: number;
  tail: number;
}

function changedRegion(oldContent: string, newContent: string): Region {
  const a = linesOf(oldContent);
  const b = linesOf(newContent);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  return { a, b, head, tail };
}

/** Lines of the region that no line diff can keep (not in the other side's region at all): a lower bound of its edits. */
function mustChange({ a, b, head, tail }: Region): number {
  const oldLines = a.slice(head, a.length - tail);
  const newLines = b.slice(head, b.length - tail);
  const inOld = new Set(oldLines);
  const inNew = new Set(newLines);
  return oldLines.filter((l) => !inNew.has(l)).length + newLines.filter((l) => !inOld.has(l)).length;
}

/** A text's lines, each with its `\n` (the last without one when the text does not end with one), as `diff` cuts them. */
function linesOf(text: string): string[] {
  const lines: string[] = [];
  let start = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', start)) {
    lines.push(text.slice(start, i + 1));
    start = i + 1;
  }
  if (start < text.length) lines.push(text.slice(start));
  return lines;
}

/** The changed region whole (see {@link lineChanges}), in the shape of `diffLines`' result. */
function regionChanges({ a, b, head, tail }: Region): Change[] {
  const part = (lines: string[], kind: { added: boolean; removed: boolean }): Change[] =>
    lines.length ? [{ value: lines.join(''), count: lines.length, ...kind }] : [];
  const same = { added: false, removed: false };
  return [
    ...part(a.slice(0, head), same),
    ...part(a.slice(head, a.length - tail), { added: false, removed: true }),
    ...part(b.slice(head, b.length - tail), { added: true, removed: false }),
    ...part(a.slice(a.length - tail), same),
  ];
}

/**
 * Display diff: `+`/`-`/space prefix, line number, text; 4 context lines around changes, longer unchanged stretches
 * collapsed to `...`. Returns the first changed line (new file numbering). Bounded: see {@link lineChanges}.
 */
export function generateDiffString(
  oldContent: string,
  newContent: string,
  contextLines = 4,
): { diff: string; firstChangedLine: number | undefined } {
  return displayDiff(lineChanges(oldContent, newContent).changes, oldContent, newContent, contextLines);
}

function displayDiff(
  parts: Change[],
  oldContent: string,
  newContent: string,
  contextLines: number,
): { diff: string; firstChangedLine: number | undefined } {
  const width = String(Math.max(oldContent.split('\n').length, newContent.split('\n').length)).length;
  const ellipsis = ` ${''.padStart(width, ' ')} ...`;
  const out: string[] = [];
  let oldLine = 1;
  let newLine = 1;
  let firstChangedLine: number | undefined;
  const isChange = (i: number) => i >= 0 && i < parts.length && Boolean(parts[i].added || parts[i].removed);

  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    const lines = part.value.split('\n');
    if (lines[lines.length - 1] === '') lines.pop();
    if (part.added || part.removed) {
      firstChangedLine ??= newLine;
      for (const line of lines) {
        if (part.added) out.push(`+${String(newLine++).padStart(width, ' ')} ${line}`);
        else out.push(`-${String(oldLine++).padStart(width, ' ')} ${line}`);
      }
      continue;
    }
    const before = isChange(i - 1);
    const after = isChange(i + 1);
    const show = (from: number, to: number) => {
      for (let k = from; k < to; k++) out.push(` ${String(oldLine + k).padStart(width, ' ')} ${lines[k]}`);
    };
    const n = lines.length;
    if (before && after) {
      if (n > 2 * contextLines) {
        show(0, contextLines);
        out.push(ellipsis);
        show(n - contextLines, n);
      } else {
        show(0, n);
      }
    } else if (before) {
      show(0, Math.min(n, contextLines));
      if (n > contextLines) out.push(ellipsis);
    } else if (after) {
      if (n > contextLines) out.push(ellipsis);
      show(Math.max(0, n - contextLines), n);
    }
    oldLine += n;
    newLine += n;
  }
  return { diff: out.join('\n'), firstChangedLine };
}

/** Standard unified patch with `--- <path>` / `+++ <path>` headers and 4 context lines. Bounded: see {@link lineChanges}. */
export function generatePatch(path: string, oldContent: string, newContent: string): string {
  return unifiedPatch(path, lineChanges(oldContent, newContent).changes, 4);
}

/**
 * The unified patch of `changes` (what `diff`'s `structuredPatch` + `formatPatch` make of the same changes, with
 * `context` lines around each change; test/unit/builtin/edit-diff.test.ts compares the two): changes no more than
 * 2 × `context` unchanged lines apart share a hunk; a line without its `\n` (the end of a file without one) is
 * followed by `\ No newline at end of file`.
 */
function unifiedPatch(path: string, changes: Change[], context: number): string {
  const hunks: StructuredPatchHunk[] = [];
  let hunk: StructuredPatchHunk | undefined;
  let oldLine = 1;
  let newLine = 1;
  const push = (prefix: string, line: string) => {
    if (line.endsWith('\n')) hunk!.lines.push(prefix + line.slice(0, -1));
    else hunk!.lines.push(prefix + line, '\\ No newline at end of file');
  };
  changes.forEach((part, i) => {
    const lines = linesOf(part.value);
    if (part.added || part.removed) {
      if (!hunk) {
        const lead = i > 0 ? linesOf(changes[i - 1].value).slice(-context) : [];
        hunk = {
          oldStart: oldLine - lead.length,
          oldLines: 0,
          newStart: newLine - lead.length,
          newLines: 0,
          lines: [],
        };
        for (const line of lead) push(' ', line);
        hunk.oldLines += lead.length;
        hunk.newLines += lead.length;
      }
      for (const line of lines) push(part.added ? '+' : '-', line);
      if (part.added) {
        hunk.newLines += lines.length;
        newLine += lines.length;
      } else {
        hunk.oldLines += lines.length;
        oldLine += lines.length;
      }
      return;
    }
    if (hunk) {
      // a stretch short enough to join the next change (and not the last part) stays inside the hunk
      const joins = lines.length <= 2 * context && i < changes.length - 1;
      const shown = joins ? lines : lines.slice(0, context);
      for (const line of shown) push(' ', line);
      hunk.oldLines += shown.length;
      hunk.newLines += shown.length;
      if (!joins) {
        hunks.push(hunk);
        hunk = undefined;
      }
    }
    oldLine += lines.length;
    newLine += lines.length;
  });
  if (hunk) hunks.push(hunk);
  return formatPatch(
    { oldFileName: path, newFileName: path, oldHeader: undefined, newHeader: undefined, hunks },
    FILE_HEADERS_ONLY,
  );
}

/** The edit's display diff and patch from one bounded line diff ({@link lineChanges}). */
export function diffEdit(
  path: string,
  before: string,
  after: string,
): { diff: string; patch: string; firstChangedLine: number | undefined } {
  const { changes } = lineChanges(before, after);
  const { diff, firstChangedLine } = displayDiff(changes, before, after, 4);
  return { diff, patch: unifiedPatch(path, changes, 4), firstChangedLine };
}

export interface EditComputation {
  /** The content to write: BOM and line endings restored. */
  finalContent: string;
  /** LF, BOM-less before/after, for diffs. */
  before: string;
  after: string;
}

/** The whole pipeline on raw file text: strip BOM, remember line ending, normalise, apply, restore ending and BOM. */
export function computeEdits(rawContent: string, edits: Edit[], path: string): EditComputation {
  const { bom, text } = stripBom(rawContent);
  const ending = detectLineEnding(text);
  const before = normalizeToLF(text);
  const normalizedEdits = edits.map((e) => ({ oldText: normalizeToLF(e.oldText), newText: normalizeToLF(e.newText) }));
  const after = applyEdits(before, normalizedEdits, path);
  return { finalContent: bom + restoreLineEndings(after, ending), before, after };
}
