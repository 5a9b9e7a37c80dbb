/**
 * A comma-separated list, as flags (`--tools read,bash`, repeatable: commander's collector) and variables
 * (`KEEL_APPROVE=bash,write`) give names: `commaList('a, b')` → ['a', 'b'], `commaList('c', ['a', 'b'])` →
 * ['a', 'b', 'c']; blanks dropped. Must not throw.
 */
export function commaList(value: string, previous: string[] = []): string[] {
  return [
    ...previous,
    ...value
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  ];
}
