/**
 * How a server's input schema of a tool differs from the one a run recorded (issue 24: "a changed input schema is
 * validated against what the run recorded, and the difference is reported"). Fields are named by their path in the
 * schema: `properties.<name>` for each property, the top-level keyword otherwise (`required`, `additionalProperties`).
 */
import type { JsonSchema } from '../tools/define-tool.js';

/** The fields added, removed and changed in the server's schema since the run recorded it (only non-empty lists). */
export interface McpSchemaChange {
  added?: string[];
  removed?: string[];
  changed?: string[];
}

/** The difference from `recorded` to `live`, or undefined when they are the same (key order aside). */
export function schemaChange(recorded: JsonSchema, live: JsonSchema): McpSchemaChange | undefined {
  const added: string[] = [];
  const removed: string[] = [];
  const changed: string[] = [];
  const compare = (a: Record<string, unknown>, b: Record<string, unknown>, prefix: string, skip?: string) => {
    for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
      if (key === skip) continue;
      const field = `${prefix}${key}`;
      if (!(key in b)) removed.push(field);
      else if (!(key in a)) added.push(field);
      else if (canonical(a[key]) !== canonical(b[key])) changed.push(field);
    }
  };
  const r = recorded as Record<string, unknown>;
  const l = live as Record<string, unknown>;
  compare(r, l, '', 'properties');
  compare(asObject(r.properties), asObject(l.properties), 'properties.');
  if (!added.length && !removed.length && !changed.length) return undefined;
  return {
    ...(added.length ? { added: added.sort() } : {}),
    ...(removed.length ? { removed: removed.sort() } : {}),
    ...(changed.length ? { changed: changed.sort() } : {}),
  };
}

/** `added: a, b; removed: c; changed: d` */
export function describeSchemaChange(c: McpSchemaChange): string {
  return (['added', 'removed', 'changed'] as const)
    .filter((k) => c[k]?.length)
    .map((k) => `${k}: ${c[k]!.join(', ')}`)
    .join('; ');
}

function asObject(v: unknown): Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
}

/** JSON with object keys sorted, so that two schemas differing only in key order compare equal. */
function canonical(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) =>
    x !== null && typeof x === 'object' && !Array.isArray(x)
      ? Object.fromEntries(
          Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : x,
  );
}
