/** Validation errors as the model sees them: ajv's messages, one line per problem (Pi's B.1 steps 6–7). */
import type { ErrorObject } from 'ajv';

/** ajv instance path (`/edits/0/newText`) as the dotted path the model sees (`edits.0.newText`); `''` stays `''`. */
function dottedPath(instancePath: string): string {
  if (instancePath === '') return '';
  return instancePath
    .replace(/^\//, '')
    .split('/')
    .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~'))
    .join('.');
}

/**
 * The body of the validation error: one `  - <path>: <message>` line per ajv error, identical lines once.
 * `required` errors of one object (same instance path and schema location) become one line
 * `  - <parent>.<first missing>: must have required properties a, b`. No errors → `Unknown validation error`.
 */
export function formatValidationErrors(errors: readonly ErrorObject[] | null | undefined): string {
  type Line = { path: string; message: string } | { required: { base: string; missing: string[] } };
  const lines: Line[] = [];
  const requiredGroups = new Map<string, { base: string; missing: string[] }>();
  for (const error of errors ?? []) {
    const missing = (error.params as { missingProperty?: unknown } | undefined)?.missingProperty;
    if (error.keyword === 'required' && typeof missing === 'string') {
      const key = `${error.instancePath}\u0000${error.schemaPath}`;
      const group = requiredGroups.get(key);
      if (group) {
        if (!group.missing.includes(missing)) group.missing.push(missing);
      } else {
        const created = { base: dottedPath(error.instancePath), missing: [missing] };
        requiredGroups.set(key, created);
        lines.push({ required: created });
      }
      continue;
    }
    lines.push({
      path: dottedPath(error.instancePath) || 'root',
      message: error.message ?? `must pass "${error.keyword}" keyword validation`,
    });
  }
  const rendered = new Set<string>();
  for (const line of lines) {
    if ('required' in line) {
      const { base, missing } = line.required;
      rendered.add(
        `  - ${base ? `${base}.${missing[0]}` : missing[0]}: must have required properties ${missing.join(', ')}`,
      );
    } else {
      rendered.add(`  - ${line.path}: ${line.message}`);
    }
  }
  return rendered.size > 0 ? [...rendered].join('\n') : 'Unknown validation error';
}
