// ESLint (flat config) with typescript-eslint. Only the rules the project has agreed on, each an error:
//   - no-floating-promises: a promise is awaited, returned, or explicitly `void`ed;
//   - consistent-type-imports: types come in through `import type` (matches verbatimModuleSyntax);
//   - the sandbox floor — workflows/ (deterministic code in Temporal's sandbox) and common/ (what workflows may import):
//     no Node builtins, no Node-only SDK packages, no `process`/`Buffer`, nothing from node-common/, worker/, client/ or
//     cli/ at run time; workflows/ may use activities/ only through `import type`
//     (docs/architecture.md#floors-what-each-folder-may-import).
// `npm run lint` runs it, and so does `npm test` (after the typecheck, before the tests).
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const nodeBuiltins = builtinModules.filter((m) => !m.startsWith('_'));

/** The message of every sandbox-floor error (workflows/ and common/). */
const SANDBOX =
  'workflows/ and common/ run in (or are imported by) the deterministic sandbox: no Node builtins, Node-only packages, process or Buffer; Node-shared code lives in node-common/.';

/** Packages that need Node (a type-only import of them is fine: it is erased). */
const NODE_ONLY_PACKAGES = [
  '@temporalio/client',
  '@temporalio/worker',
  '@temporalio/activity',
  '@temporalio/envconfig',
  '@temporalio/testing',
  '@temporalio/proto',
];
const NODE_ONLY_PACKAGE_PATTERNS = [
  '@temporalio/common/lib/internal-non-workflow',
  '@temporalio/common/lib/internal-non-workflow/*',
  '@temporalio/external-storage-*',
  '@aws-sdk/*',
  '@modelcontextprotocol/*',
];

/** The sandbox floor's import rule, with `extra` patterns (workflows/ adds its activities rule). */
function sandboxImports(extra = []) {
  return [
    'error',
    {
      paths: [
        ...nodeBuiltins.map((name) => ({ name, message: SANDBOX })),
        ...NODE_ONLY_PACKAGES.map((name) => ({ name, allowTypeImports: true, message: SANDBOX })),
      ],
      patterns: [
        { group: ['node:*'], message: SANDBOX },
        { group: NODE_ONLY_PACKAGE_PATTERNS, allowTypeImports: true, message: SANDBOX },
        { group: upTo(['node-common', 'worker', 'client', 'cli']), allowTypeImports: true, message: SANDBOX },
        ...extra,
      ],
    },
  ];
}

/** `../folder`, `../folder/**`, `../../folder`, `../../folder/**` for each folder: relative imports of those folders. */
function upTo(folders) {
  return folders.flatMap((f) =>
    ['../', '../../', '../../../'].flatMap((up) => [`${up}${f}`, `${up}${f}/*`, `${up}${f}/**`]),
  );
}

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
    files: ['workflows/**/*.ts', 'common/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': sandboxImports(),
      'no-restricted-globals': ['error', { name: 'process', message: SANDBOX }, { name: 'Buffer', message: SANDBOX }],
    },
  },
  {
    // Later in the list, so it replaces the import rule above for workflows/ (flat config does not merge a rule's options).
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': sandboxImports([
        {
          group: upTo(['activities']),
          allowTypeImports: true,
          message: 'workflows/ may use activities only through `import type` (and proxyActivities).',
        },
      ]),
    },
  },
);
