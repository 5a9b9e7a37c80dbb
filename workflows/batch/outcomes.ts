/**
 * The per-task outcomes a sliding-window batch carries across continue-as-new, packed into one string so that 50,000
 * finished tasks stay far below Temporal's 2 MB payload limit (test/unit/batch-outcomes.test.ts measures it).
 *
 * Encoding: task after task, in index order. An unfinished task is `.`; a finished one is three numbers — `turns * 4 +
 * status code`, total tokens, cost in micro-dollars (rounded) — each written most significant digit first in base 32:
 * every digit but the last from `CONT`, the last from `LAST`, so numbers need no separators. A typical task takes
 * 6–8 characters, one with 999 turns, 10 M tokens and $100 takes 14. Error texts are not packed (the batch keeps
 * those of its first failures in `failures`; the child's result has every one).
 */
import { STATUS_CODES } from './input.js';

import type { PackedOutcome } from '../../common/task-outcome.js';
export type { PackedOutcome };

const CONT = '0123456789abcdefghijklmnopqrstuv';
const LAST = 'ABCDEFGHIJKLMNOPQRSTUVWXYZwxyz*+';
const UNFINISHED = '.';
const CONT_INDEX = new Map([...CONT].map((c, i) => [c, i]));
const LAST_INDEX = new Map([...LAST].map((c, i) => [c, i]));

function encodeNumber(n: number): string {
  let v = Math.max(0, Math.floor(n));
  let s = LAST[v % 32];
  v = Math.floor(v / 32);
  while (v > 0) {
    s = CONT[v % 32] + s;
    v = Math.floor(v / 32);
  }
  return s;
}

/** Packs `outcomes[0 .. total)` (null or missing: unfinished). */
export function packOutcomes(outcomes: readonly (PackedOutcome | null | undefined)[], total: number): string {
  const parts: string[] = [];
  for (let i = 0; i < total; i++) {
    const o = outcomes[i];
    if (!o) parts.push(UNFINISHED);
    else
      parts.push(
        encodeNumber(o[1] * STATUS_CODES.length + o[0]) + encodeNumber(o[2]) + encodeNumber(Math.round(o[3] * 1e6)),
      );
  }
  // trailing unfinished tasks need no characters
  let end = parts.length;
  while (end > 0 && parts[end - 1] === UNFINISHED) end--;
  return parts.slice(0, end).join('');
}

/** The inverse of {@link packOutcomes}: index → outcome, null for unfinished tasks. Throws on a malformed string. */
export function unpackOutcomes(packed: string): (PackedOutcome | null)[] {
  const out: (PackedOutcome | null)[] = [];
  let pos = 0;
  const readNumber = (): number => {
    let acc = 0;
    for (;;) {
      const c = packed[pos++];
      const cont = CONT_INDEX.get(c);
      if (cont !== undefined) {
        acc = acc * 32 + cont;
        continue;
      }
      const last = LAST_INDEX.get(c);
      if (last === undefined) throw new Error(`malformed packed outcomes at ${pos - 1}`);
      return acc * 32 + last;
    }
  };
  while (pos < packed.length) {
    if (packed[pos] === UNFINISHED) {
      pos++;
      out.push(null);
      continue;
    }
    const first = readNumber();
    const tokens = readNumber();
    const micros = readNumber();
    out.push([first % STATUS_CODES.length, Math.floor(first / STATUS_CODES.length), tokens, micros / 1e6]);
  }
  return out;
}

/** Distinct error texts a batch keeps for its `results` query (each at most 300 characters). */
export const MAX_ERROR_TEXTS = 100;
/** Runs of consecutive tasks sharing an error text that continue-as-new carries (the rest: read the child). */
export const MAX_ERROR_RANGES = 2000;

/** Error texts by task, packed: each text once, and runs `[from, to, text]` of consecutive tasks with that text. */
export interface PackedErrors {
  texts: string[];
  ranges: [from: number, to: number, text: number][];
}

/**
 * Packs task index → error text into {@link PackedErrors}, at most `MAX_ERROR_RANGES` runs (the first tasks win). A
 * batch whose budget is spent records the same text for every task not started: one run.
 */
export function packErrors(errors: ReadonlyMap<number, string>): PackedErrors {
  const texts: string[] = [];
  const ids = new Map<string, number>();
  const ranges: PackedErrors['ranges'] = [];
  for (const i of [...errors.keys()].sort((a, b) => a - b)) {
    const text = errors.get(i)!;
    let id = ids.get(text);
    const last = ranges[ranges.length - 1];
    if (id !== undefined && last && last[2] === id && last[1] === i - 1) {
      last[1] = i;
      continue;
    }
    if (ranges.length >= MAX_ERROR_RANGES) break;
    if (id === undefined) {
      id = texts.push(text) - 1;
      ids.set(text, id);
    }
    ranges.push([i, i, id]);
  }
  return { texts, ranges };
}

/** The inverse of {@link packErrors}. */
export function unpackErrors(packed: PackedErrors | undefined): Map<number, string> {
  const errors = new Map<number, string>();
  for (const [from, to, id] of packed?.ranges ?? []) for (let i = from; i <= to; i++) errors.set(i, packed!.texts[id]);
  return errors;
}
