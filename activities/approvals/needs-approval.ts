/**
 * Whether a prepared call needs a person's approval (README "Approvals"), and the digest that binds an approval to
 * exactly its arguments. Runs in the preparation activity, after validation and `beforeToolCall`.
 */
import { createHash } from 'node:crypto';
import type { CallScope } from '../tools/run-tool.js';

/**
 * The tool's `approval` (`'always'`, or its predicate on the prepared arguments) decides, unless the worker's
 * `hooks.needsApproval` returns a boolean, which wins. A throw becomes the call's error result.
 */
export async function needsApproval(s: CallScope, args: unknown): Promise<boolean> {
  const approval = s.tool?.approval;
  const declared =
    approval === 'always' ? true : typeof approval === 'function' ? (await approval(args, s.context)) === true : false;
  const policy = await s.hooks.needsApproval?.(
    { assistantMessage: s.assistantMessage!, toolCall: s.call, args, context: s.context, declared },
    s.signal,
  );
  return typeof policy === 'boolean' ? policy : declared;
}

/** sha256 (hex) of the canonical JSON of `args` (object keys sorted at every level). */
export function argsDigest(args: unknown): string {
  return createHash('sha256').update(canonicalJson(args)).digest('hex');
}

export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}
