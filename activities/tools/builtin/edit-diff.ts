/**
 * Matching, applying and diffing for the `edit` tool (Pi reference §C.3). Pure functions over strings, plus
 * {@link computeEditsDiff}, the preview that applies the same logic to a file without writing it.
 */
import { diffLines, FILE_HEADERS_ONLY, formatPatch, structuredPatch } from 'diff';
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
 * Display diff: `+`/`-`/space prefix, line number, text; 4 context lines around changes, longer unchanged stretches
 * collapsed to `...`. Returns the first changed line (new file numbering).
 */
export function generateDiffString(
  oldContent: string,
  newContent: string,
  contextLines = 4,
): { diff: string; firstChangedLine: number | undefined } {
  const parts = diffLines(oldContent, newContent);
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

/** Standard unified patch with `--- <path>` / `+++ <path>` headers and 4 context lines. */
export function generatePatch(path: string, oldContent: string, newContent: string): string {
  return formatPatch(
    structuredPatch(path, path, oldContent, newContent, undefined, undefined, { context: 4 }),
    FILE_HEADERS_ONLY,
  );
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
