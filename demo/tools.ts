/** The demo's tools: `calc` (arithmetic by a small parser, never `eval`) and `read_file`, confined to a workspace. */
import { readFile } from 'node:fs/promises';
import { defineTool } from '../activities/tools/define-tool.js';
import { Workspace } from '../activities/tools/builtin/paths.js';

/** Evaluates + - * / and parentheses over decimal numbers. Throws on anything else, and on division by zero. */
export function calculate(expression: string): number {
  const tokens = expression.match(/\d+(?:\.\d+)?|[-+*/()]|\S/g) ?? [];
  let i = 0;
  const peek = () => tokens[i];
  const next = () => tokens[i++];
  const primary = (): number => {
    const t = next();
    if (t === '(') {
      const v = sum();
      if (next() !== ')') throw new Error(`Missing ")" in ${expression}`);
      return v;
    }
    if (t === '-') return -primary();
    if (t !== undefined && /^\d/.test(t)) return Number(t);
    throw new Error(`Cannot parse expression: ${expression}`);
  };
  const product = (): number => {
    let v = primary();
    while (peek() === '*' || peek() === '/') {
      const op = next();
      const r = primary();
      if (op === '/' && r === 0) throw new Error('Division by zero');
      v = op === '*' ? v * r : v / r;
    }
    return v;
  };
  const sum = (): number => {
    let v = product();
    while (peek() === '+' || peek() === '-') v = next() === '+' ? v + product() : v - product();
    return v;
  };
  const value = sum();
  if (i !== tokens.length) throw new Error(`Cannot parse expression: ${expression}`);
  return value;
}

export const calcTool = defineTool({
  name: 'calc',
  label: 'Calculator',
  description: 'Evaluates an arithmetic expression with + - * / and parentheses.',
  parameters: {
    type: 'object',
    properties: { expression: { type: 'string' } },
    required: ['expression'],
    additionalProperties: false,
  },
  idempotent: true,
  execute: async (_id, args: { expression: string }) => ({
    content: [{ type: 'text', text: String(calculate(args.expression)) }],
  }),
});

export function readFileTool(workspace: string) {
  const ws = new Workspace(workspace);
  return defineTool({
    name: 'read_file',
    label: 'Read file',
    description: 'Reads a UTF-8 text file inside the workspace.',
    parameters: {
      type: 'object',
      properties: { path: { type: 'string' } },
      required: ['path'],
      additionalProperties: false,
    },
    idempotent: true,
    execute: async (_id, args: { path: string }) => ({
      content: [{ type: 'text', text: await readFile(await ws.resolve(args.path), 'utf8') }],
    }),
  });
}
