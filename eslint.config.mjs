// ESLint (flat config) with typescript-eslint. Only the rules the project has agreed on, each an error:
//   - no-floating-promises: a promise is awaited, returned, or explicitly `void`ed;
//   - consistent-type-imports: types come in through `import type` (matches verbatimModuleSyntax);
//   - workflows/ (deterministic code in Temporal's sandbox): no Node builtins, no runtime import of activities/.
// `npm run lint` runs it; it is not part of `npm test` yet.
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const nodeBuiltins = builtinModules.filter((m) => !m.startsWith('_'));

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      'api-docs/',
      '.keel/',
      'test/artifacts/',
      'bench/results/',
      'schemas/',
      '**/*.generated.ts',
    ],
  },
  {
    files: ['**/*.ts', '**/*.mts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: {
        projectService: { allowDefaultProject: ['vitest.config.ts'] },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: nodeBuiltins.map((name) => ({
            name,
            message: 'workflows/ runs in the deterministic sandbox: no Node builtins.',
          })),
          patterns: [
            { group: ['node:*'], message: 'workflows/ runs in the deterministic sandbox: no Node builtins.' },
            {
              group: [
                '../activities',
                '../activities/*',
                '../activities/**',
                '../../activities',
                '../../activities/*',
                '../../activities/**',
              ],
              allowTypeImports: true,
              message: 'workflows/ may use activities only through `import type` (and proxyActivities).',
            },
          ],
        },
      ],
    },
  },
);
