/**
 * A tools module: `npx keel dev --tools-module examples/tools.ts` (or `keel worker --tools-module …`) registers every
 * tool in the exported `tools` array next to the built-in ones. Outside this repository import from 'keel' instead.
 */
import { defineTool, Type } from '../index.js';
import { calculate } from '../demo/tools.js';

export const calc = defineTool({
  name: 'calc',
  description: 'Evaluates an arithmetic expression (+ - * / and parentheses).',
  // TypeBox: the JSON Schema sent to the model and, inferred from it, the type of `args` ({ expression: string })
  parameters: Type.Object({ expression: Type.String() }),
  idempotent: true, // retried by Temporal after a lost worker; non-idempotent tools run at most once
  execute: async (_toolCallId, args) => ({
    content: [{ type: 'text', text: String(calculate(args.expression)) }],
  }),
});

export const tools = [calc];
