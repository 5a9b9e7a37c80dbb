/**
 * Issue 34 item 2: one file per CLI command, each with a short `register(program)` and named action functions. Every
 * function named `register*` in cli/commands/*.ts spans at most 40 lines (counted as ESLint's max-lines-per-function
 * counts them: from its first to its last line, comments and blank lines included). ESLint cannot restrict that rule
 * to functions by name, and other functions there (actions, renderers) may run to the product-wide 100, so it is
 * checked here, with the TypeScript compiler API.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const COMMANDS = fileURLToPath(new URL('../../cli/commands/', import.meta.url));
const MAX_LINES = 40;

interface RegisterFunction {
  where: string;
  name: string;
  lines: number;
}

/** The function's name when it is named `register*`: a declaration, a method, or a variable holding a function. */
function registerName(node: ts.Node): string | undefined {
  let name: string | undefined;
  if ((ts.isFunctionDeclaration(node) || ts.isMethodDeclaration(node)) && node.name) name = node.name.getText();
  else if (
    ts.isVariableDeclaration(node) &&
    node.initializer &&
    (ts.isArrowFunction(node.initializer) || ts.isFunctionExpression(node.initializer))
  )
    name = node.name.getText();
  return name?.startsWith('register') ? name : undefined;
}

/** Every `register*` function of cli/commands/*.ts, with its file:line and its length in lines. */
function registerFunctions(): RegisterFunction[] {
  const found: RegisterFunction[] = [];
  for (const file of readdirSync(COMMANDS).filter((f) => f.endsWith('.ts'))) {
    const source = ts.createSourceFile(file, readFileSync(join(COMMANDS, file), 'utf8'), ts.ScriptTarget.ES2023, true);
    const lineOf = (pos: number) => source.getLineAndCharacterOfPosition(pos).line + 1;
    const walk = (node: ts.Node) => {
      const name = registerName(node);
      if (name !== undefined) {
        const fn = ts.isVariableDeclaration(node) ? node.initializer! : node;
        const first = lineOf(fn.getStart(source));
        found.push({ where: `cli/commands/${file}:${first}`, name, lines: lineOf(fn.getEnd()) - first + 1 });
      }
      ts.forEachChild(node, walk);
    };
    walk(source);
  }
  return found;
}

describe('CLI command registration (issue 34 item 2)', () => {
  const functions = registerFunctions();

  it('finds the register functions of cli/commands', () => {
    expect(functions.filter((f) => f.name === 'register').length).toBeGreaterThanOrEqual(10);
  });

  it(`keeps every register* function in cli/commands at most ${MAX_LINES} lines`, () => {
    const offenders = functions
      .filter((f) => f.lines > MAX_LINES)
      .map(
        (f) =>
          `${f.where} ${f.name}: ${f.lines} lines (max ${MAX_LINES}); move actions and option chains into named functions`,
      );
    expect(offenders, offenders.join('\n')).toEqual([]);
  });
});
