/**
 * The package's entries by runtime, read from the sources (fast, no build; test/temporal/package.test.ts checks the
 * built package in a child process): what each entry's runtime import graph reaches. `import type` / `export type`
 * are erased by the compiler and not followed; `import { type X }` keeps the module load (verbatimModuleSyntax), so
 * it is followed.
 */
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The project files (.ts, and the .mjs of scripts/; relative to the root) and the bare specifiers (packages, `node:` modules) `entry` loads. */
function importGraph(entry: string): { files: string[]; bare: string[] } {
  const files = new Set<string>();
  const bare = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    const source = ts.createSourceFile(file, readFileSync(resolve(ROOT, file), 'utf8'), ts.ScriptTarget.ES2023);
    const specifiers: string[] = [];
    const walk = (node: ts.Node) => {
      if (ts.isImportDeclaration(node) && !node.importClause?.isTypeOnly)
        specifiers.push((node.moduleSpecifier as ts.StringLiteral).text);
      else if (ts.isExportDeclaration(node) && !node.isTypeOnly && node.moduleSpecifier)
        specifiers.push((node.moduleSpecifier as ts.StringLiteral).text);
      else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
        const [arg] = node.arguments;
        if (arg && ts.isStringLiteral(arg)) specifiers.push(arg.text);
      }
      ts.forEachChild(node, walk);
    };
    walk(source);
    for (const s of specifiers) {
      if (!s.startsWith('.')) {
        bare.add(s.startsWith('node:') ? s : s.split('/', s.startsWith('@') ? 2 : 1).join('/'));
        continue;
      }
      const target = relative(ROOT, resolve(ROOT, dirname(file), s)).replace(/\.js$/, '.ts');
      if (target.endsWith('.ts') || target.endsWith('.mjs')) visit(target); // scripts/ are .mjs
    }
  };
  visit(entry);
  return { files: [...files].sort(), bare: [...bare].sort() };
}

describe('entries by runtime, from the sources', () => {
  it('keel/client reaches no worker/ or activities/ file and no @temporalio/worker; workflows/ only for definitions', () => {
    const { files, bare } = importGraph('client.ts');
    expect(files.filter((f) => f.startsWith('worker/') || f.startsWith('activities/'))).toEqual([]);
    expect(files.filter((f) => f.startsWith('workflows/'))).toEqual(['workflows/definitions.ts']);
    expect(bare).toContain('@temporalio/client');
    expect(
      bare.filter((p) => ['@temporalio/worker', '@temporalio/testing', '@swc/core', 'webpack'].includes(p)),
    ).toEqual([]);
  });

  it('keel/workflow reaches no Node built-in and none of client/, worker/, activities/', () => {
    const { files, bare } = importGraph('workflow.ts');
    expect(files.filter((f) => /^(client|worker|activities)\//.test(f))).toEqual([]);
    expect(bare.filter((p) => p.startsWith('node:'))).toEqual([]);
    expect(bare).toEqual(expect.arrayContaining(['@temporalio/workflow']));
  });

  it('keel/worker and the worker process (npm run worker) reach nothing of the keel CLI (cli/) nor commander', () => {
    for (const entry of ['worker.ts', 'worker/main.ts']) {
      const { files, bare } = importGraph(entry);
      expect(files.filter((f) => f.startsWith('cli/') || f.startsWith('client/cli/'))).toEqual([]);
      expect(bare).not.toContain('commander');
    }
  });

  it('keel/worker and the worker process load no dev server: no dev/ or scripts/ file, no @temporalio/testing', () => {
    for (const entry of ['worker.ts', 'worker/main.ts']) {
      const { files, bare } = importGraph(entry);
      expect(files.filter((f) => f.startsWith('dev/') || f.startsWith('scripts/'))).toEqual([]);
      expect(bare).not.toContain('@temporalio/testing');
    }
  });

  it('the check sees a dev-server import: keel/dev reaches @temporalio/testing and scripts/temporal-cli.mjs', () => {
    const { files, bare } = importGraph('dev.ts');
    expect(bare).toContain('@temporalio/testing');
    expect(files).toContain('scripts/temporal-cli.mjs');
  });

  it('the check sees a worker import: keel/worker reaches @temporalio/worker', () => {
    expect(importGraph('worker.ts').bare).toContain('@temporalio/worker');
  });
});
