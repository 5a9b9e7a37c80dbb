/**
 * workflows/ is deterministic code bundled into Temporal's sandbox: it may import at runtime only @temporalio/workflow
 * (and @temporalio/common, which the sandbox itself runs on),
 * its own files and common/; activities only as `import type`; no Node builtins; no clocks, randomness or timers.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const DIR = fileURLToPath(new URL('../../workflows/', import.meta.url));
const files = readdirSync(DIR).filter((f) => f.endsWith('.ts'));

/** Runtime import specifiers of a file (type-only imports excluded). */
export function runtimeImports(source: string): string[] {
  const out: string[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s*['"]([^'"]+)['"]/gm;
  for (const m of source.matchAll(re)) {
    const typeOnly = Boolean(m[2]) || /^\{\s*(type\s+[^,}]+\s*,?\s*)+\}$/.test(m[3].trim());
    if (!typeOnly) out.push(m[4]);
  }
  for (const m of source.matchAll(/^\s*import\s+['"]([^'"]+)['"]/gm)) out.push(m[1]);
  for (const m of source.matchAll(/\b(?:require|import)\(\s*['"]([^'"]+)['"]\s*\)/g)) out.push(m[1]);
  return out;
}

function allowed(spec: string): boolean {
  return spec === '@temporalio/workflow' || spec === '@temporalio/common' || /^\.\/[\w-]+\.js$/.test(spec) || /^\.\.\/common\/[\w-]+\.js$/.test(spec);
}

describe('workflows/ imports only deterministic code', () => {
  it.each(files)('%s', (file) => {
    const source = readFileSync(join(DIR, file), 'utf8');
    const bad = runtimeImports(source).filter((s) => !allowed(s));
    expect(bad, `${file} imports ${bad.join(', ')} at runtime; use \`import type\` for activities, nothing from Node`).toEqual([]);
    const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    expect(code).not.toMatch(/Date\.now\(|Math\.random\(|setTimeout\(|setInterval\(|process\.|require\(/);
  });

  it('the rule catches a Node builtin and a runtime activity import', () => {
    expect(runtimeImports(`import { readFileSync } from 'node:fs';`).filter((s) => !allowed(s))).toEqual(['node:fs']);
    expect(runtimeImports(`import { createActivities } from '../activities/index.js';`).filter((s) => !allowed(s))).toEqual(['../activities/index.js']);
    expect(runtimeImports(`import type { KeelActivities } from '../activities/index.js';`)).toEqual([]);
    expect(runtimeImports(`import { type A, type B } from '../activities/index.js';`)).toEqual([]);
  });
});
