/**
 * How deep a JSON value nests, checked without recursion (a value thousands of levels deep makes `JSON.stringify`
 * and recursive checkers throw `RangeError: Maximum call stack size exceeded`). Pure: the workflow uses it too.
 */

/** Deepest nesting of objects and arrays an `AgentRunInput` may have (a transcript's tool arguments included). */
export const MAX_INPUT_NESTING = 256;

/**
 * The path of the first place where `value` nests deeper than `max` objects/arrays (`metadata.a.a.a…` shortened to
 * its top field), or undefined when it does not.
 */
export function tooDeep(value: unknown, max = MAX_INPUT_NESTING): string | undefined {
  const stack: { v: unknown; depth: number; top: string }[] = [{ v: value, depth: 0, top: '' }];
  const seen = new Set<object>();
  while (stack.length > 0) {
    const { v, depth, top } = stack.pop()!;
    if (v === null || typeof v !== 'object' || seen.has(v)) continue;
    seen.add(v);
    if (depth >= max) return top || 'input';
    for (const [k, child] of Object.entries(v)) stack.push({ v: child, depth: depth + 1, top: top || k });
  }
  return undefined;
}

/** The validation line for a value nested too deeply at `field`. */
export const nestedTooDeep = (field: string, max = MAX_INPUT_NESTING): string =>
  `${field}: nested more than ${max} levels deep`;
