/**
 * The digest that binds an approval to exactly a call's arguments (README "Approvals"), also how a counterfactual
 * replay matches a call with a recorded one (docs/runs.md#counterfactual-replay): shared by the tool activities and
 * the client, so it lives with the Node-only modules both may load.
 */
import { createHash } from 'node:crypto';

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
