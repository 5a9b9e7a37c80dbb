/**
 * workflows/ is deterministic code bundled into Temporal's sandbox: it may import at runtime only @temporalio/workflow
 * (and @temporalio/common, which the sandbox itself runs on),
 * its own files and common/; activities only as `import type`; no Node builtins; no clocks, randomness or timers.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const DIR = join(ROOT, 'workflows');
const files = readdirSync(DIR, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));

/**
 * The import rule is eslint.config.mjs's `no-restricted-imports` for workflows/. Here only that rule runs, without
 * type information (fast): the other rules are `npm run lint`'s job.
 */
const eslint = new ESLint({
  cwd: ROOT,
  overrideConfig: {
    languageOptions: { parserOptions: { projectService: false, project: null } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'off',
      '@typescript-eslint/consistent-type-imports': 'off',
      'max-lines-per-function': 'off',
    },
  },
});

async function importProblems(code: string, file = join(DIR, 'probe.ts')): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: file });
  return result.messages.map((m) => `${m.ruleId ?? 'parse'}: ${m.message}`);
}

describe('workflows/ imports only deterministic code', () => {
  it.each(files)('%s', async (file) => {
    const source = readFileSync(join(DIR, file), 'utf8');
    expect(
      await importProblems(source, join(DIR, file)),
      `${file}: use \`import type\` for activities, nothing from Node`,
    ).toEqual([]);
    const code = source.replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
    expect(code).not.toMatch(/Date\.now\(|Math\.random\(|setTimeout\(|setInterval\(|process\.|require\(/);
  });

  it('the rule catches a Node builtin and a runtime activity import (from a subfolder too), and allows type imports', async () => {
    const builtin =
      "'node:fs' import is restricted from being used by a pattern. workflows/ runs in the deterministic sandbox: no Node builtins.";
    expect(await importProblems(`import { readFileSync } from 'node:fs';\nexport const x = readFileSync;`)).toEqual([
      `@typescript-eslint/no-restricted-imports: ${builtin}`,
    ]);
    expect(
      await importProblems(
        `import { createActivities } from '../activities/index.js';\nexport const x = createActivities;`,
      ),
    ).toEqual([
      "@typescript-eslint/no-restricted-imports: '../activities/index.js' import is restricted from being used by a pattern. workflows/ may use activities only through `import type` (and proxyActivities).",
    ]);
    expect(
      await importProblems(
        `import { createActivities } from '../../activities/index.js';\nexport const x = createActivities;`,
        join(DIR, 'agent', 'probe.ts'),
      ),
    ).toEqual([
      "@typescript-eslint/no-restricted-imports: '../../activities/index.js' import is restricted from being used by a pattern. workflows/ may use activities only through `import type` (and proxyActivities).",
    ]);
    expect(
      await importProblems(
        `import type { KeelActivities } from '../activities/index.js';\nexport type X = KeelActivities;`,
      ),
    ).toEqual([]);
    expect(
      await importProblems(`import { type A, type B } from '../activities/index.js';\nexport type X = A | B;`),
    ).toEqual([]);
  });
});
