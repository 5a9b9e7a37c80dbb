// ESLint (flat config) with typescript-eslint. Only the rules the project has agreed on, each an error:
//   - no-floating-promises: a promise is awaited, returned, or explicitly `void`ed;
//   - consistent-type-imports: types come in through `import type` (matches verbatimModuleSyntax);
//   - max-lines-per-function (100) in the product folders (activities, client, cli, common, node-common, dev, workflows, worker, demo, bin);
//   - the sandbox floor — workflows/ (deterministic code in Temporal's sandbox) and common/ (what workflows may import):
//     no Node builtins, no Node-only SDK packages, no `process`/`Buffer`, nothing from node-common/, worker/, client/ or
//     cli/ at run time; workflows/ may use activities/ only through `import type`
//     (docs/architecture.md#floors-what-each-folder-may-import).
// `npm run lint` runs it, and so does `npm test` (after the typecheck, before the tests).
import { builtinModules } from 'node:module';
import tseslint from 'typescript-eslint';

const nodeBuiltins = builtinModules.filter((m) => !m.startsWith('_'));

/** The sandbox floor's messages for `folder`: a Node builtin; a Node-only package or folder, `process` or `Buffer`. */
function sandboxMessages(folder) {
  const where =
    folder === 'workflows/'
      ? 'workflows/ runs in the deterministic sandbox'
      : `${folder} is imported by workflows/ (the deterministic sandbox)`;
  return {
    builtin: `${where}: no Node builtins.`,
    nodeOnly: `${where}: no Node-only packages or folders (node-common/, worker/, client/, cli/), no process or Buffer.`,
  };
}

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

/** The sandbox floor's import rule for `folder`, with `extra` patterns (workflows/ adds its activities rule). */
function sandboxImports(folder, extra = []) {
  const { builtin, nodeOnly } = sandboxMessages(folder);
  return [
    'error',
    {
      paths: [
        ...nodeBuiltins.map((name) => ({ name, message: builtin })),
        ...NODE_ONLY_PACKAGES.map((name) => ({ name, allowTypeImports: true, message: nodeOnly })),
      ],
      patterns: [
        { group: ['node:*'], message: builtin },
        { group: NODE_ONLY_PACKAGE_PATTERNS, allowTypeImports: true, message: nodeOnly },
        { group: upTo(['node-common', 'worker', 'client', 'cli']), allowTypeImports: true, message: nodeOnly },
        ...extra,
      ],
    },
  ];
}

/** The sandbox floor's globals rule for `folder`: no `process`, no `Buffer`. */
function sandboxGlobals(folder) {
  const { nodeOnly } = sandboxMessages(folder);
  return ['error', { name: 'process', message: nodeOnly }, { name: 'Buffer', message: nodeOnly }];
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
    // Product code: no function over 100 lines (split it into named steps).
    files: ['{activities,client,cli,common,node-common,dev,workflows,worker,demo,bin}/**/*.{ts,mts,mjs}'],
    rules: { 'max-lines-per-function': ['error', { max: 100 }] },
  },
  {
    files: ['common/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': sandboxImports('common/'),
      'no-restricted-globals': sandboxGlobals('common/'),
    },
  },
  {
    files: ['workflows/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': sandboxImports('workflows/', [
        {
          group: upTo(['activities']),
          allowTypeImports: true,
          message: 'workflows/ may use activities only through `import type` (and proxyActivities).',
        },
      ]),
      'no-restricted-globals': sandboxGlobals('workflows/'),
    },
  },
);
