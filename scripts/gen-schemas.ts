/**
 * Writes the JSON Schemas other languages use to start Keel runs (docs/architecture.md#run-input-and-result) into schemas/:
 *   agent-run-input.json   — `AgentRunInput`, the one argument of `agentWorkflow` (from common/run-input-schema.ts AGENT_RUN_INPUT_SCHEMA)
 *   agent-run-result.json  — `AgentRunResult`, its result (and the details of an `AgentRunFailed` failure)
 *   agent-batch-input.json — `AgentBatchInput`, the argument of `agentBatchWorkflow`
 * and the validation code Keel runs, compiled once here by ajv's standalone code generation
 * (https://ajv.js.org/standalone.html) from the same schemas, as plain functions (no ajv compile at run time, safe in
 * the workflow sandbox):
 *   common/message-validators.generated.ts — the messages of common/message-schemas.ts (client, Updates, signals,
 *                                            model output; imported by workflow code)
 *   common/input-validator.generated.ts    — AgentRunInput (client, CLI, the startRun activity)
 *
 *   npx tsx scripts/gen-schemas.ts           regenerate
 *   npx tsx scripts/gen-schemas.ts --check   exit 1 when a file differs from the code (test/unit/cli-schemas.test.ts and
 *                                            test/unit/generated-validators.test.ts do the same)
 */
import { readFileSync, writeFileSync, mkdirSync, existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import standalone from 'ajv/dist/standalone/index.js';
import type { TSchema } from 'typebox';
import { AGENT_BATCH_INPUT_SCHEMA } from '../common/batch-input-schema.js';
import {
  ASSISTANT_MESSAGE_SCHEMA,
  INCOMING_MESSAGE_SCHEMA,
  MESSAGE_SCHEMA,
  USAGE_SCHEMA,
} from '../common/message-schemas.js';
import { AGENT_RUN_INPUT_SCHEMA } from '../common/run-input-schema.js';
import { AGENT_RUN_RESULT_SCHEMA } from '../common/run-result-schema.js';

export const SCHEMAS_DIR = fileURLToPath(new URL('../schemas/', import.meta.url));
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DRAFT = 'http://json-schema.org/draft-07/schema#';

function withDraft(schema: object): Record<string, unknown> {
  return { $schema: DRAFT, ...schema };
}

/** The files of schemas/ as the code defines them. */
export function schemaFiles(): { name: string; content: string }[] {
  const files = [
    ['agent-run-input.json', AGENT_RUN_INPUT_SCHEMA],
    ['agent-run-result.json', AGENT_RUN_RESULT_SCHEMA],
    ['agent-batch-input.json', AGENT_BATCH_INPUT_SCHEMA],
  ] as const;
  return files.map(([name, schema]) => ({
    name,
    content: `${JSON.stringify(withDraft(schema), null, 2)}\n`,
  }));
}

/** Names of the files that differ from the code (missing counts as different). */
export function driftedSchemas(dir = SCHEMAS_DIR): string[] {
  return schemaFiles()
    .filter((f) => !existsSync(join(dir, f.name)) || readFileSync(join(dir, f.name), 'utf8') !== f.content)
    .map((f) => f.name);
}

/** The generated validator modules: path (from the repository root), what they export, from which schema. */
const VALIDATOR_MODULES: { path: string; what: string; workflowSafe?: true; exports: Record<string, TSchema> }[] = [
  {
    path: 'common/message-validators.generated.ts',
    workflowSafe: true,
    what: 'the messages of common/message-schemas.ts; imported by workflow code, so plain functions only',
    exports: {
      validateIncomingMessage: INCOMING_MESSAGE_SCHEMA,
      validateAssistantMessage: ASSISTANT_MESSAGE_SCHEMA,
      validateUsage: USAGE_SCHEMA,
    },
  },
  {
    path: 'common/input-validator.generated.ts',
    what: 'AgentRunInput (common/run-input-schema.ts) and a transcript entry (common/message-schemas.ts)',
    exports: { validateAgentRunInput: AGENT_RUN_INPUT_SCHEMA, validateMessage: MESSAGE_SCHEMA },
  },
];

/**
 * One module of ajv standalone validation code (ESM), typed for TypeScript: each export is a {@link
 * common/validate-errors.ts Validator} (`(value) => boolean`, with `errors` after a refusal).
 */
function validatorModule(m: (typeof VALIDATOR_MODULES)[number]): string {
  // the options the project always validates with: every error at once, unknown keywords ignored
  const ajv = new Ajv({ allErrors: true, strict: false, code: { source: true, esm: true, lines: true } });
  const names = Object.keys(m.exports);
  for (const name of names) ajv.addSchema({ ...m.exports[name], $id: undefined }, name);
  let code = standalone.default(ajv, Object.fromEntries(names.map((n) => [n, n])));
  // ajv's ESM output still `require`s its runtime helpers (ucs2length for `minLength`): import them instead (Node gives
  // a CommonJS module's exports as the default import, a bundler may give its `default` export)
  code = code.replace(
    /^const (\w+) = require\("(ajv\/dist\/runtime\/\w+)"\)\.default;$/gm,
    (_: string, name: string, path: string) =>
      `import ${name}Module from '${path}.js';\nconst ${name} = ${name}Module.default ?? ${name}Module;`,
  );
  if (/\brequire\(/.test(code)) throw new Error(`gen-schemas: ajv emitted a require in ${m.path}`);
  if (m.workflowSafe && /^import /m.test(code)) throw new Error(`gen-schemas: ${m.path} must not import anything`);
  // typed exports instead of ajv's untyped `export const name = validateN;`
  const typed: string[] = [];
  for (const name of names) {
    const re = new RegExp(`export const ${name} = (\\w+);`);
    const fn = re.exec(code)?.[1];
    if (!fn) throw new Error(`gen-schemas: ajv emitted no export ${name}`);
    code = code.replace(re, '');
    typed.push(`export const ${name} = ${fn} as unknown as Validator;`);
  }
  return [
    `// Generated by \`npm run gen-schemas\` (scripts/gen-schemas.ts) with ajv's standalone code: ${m.what}.`,
    '// Do not edit: change the schema and regenerate (test/unit/generated-validators.test.ts checks this file).',
    '// @ts-nocheck',
    "import type { Validator } from './validate-errors.js';",
    code.replace(/^"use strict";\n?/, '').trim(),
    ...typed,
    '',
  ].join('\n');
}

/** The generated validator modules as the code defines them (path from the repository root). */
export function validatorFiles(): { path: string; content: string }[] {
  return VALIDATOR_MODULES.map((m) => ({ path: m.path, content: validatorModule(m) }));
}

/** Paths of the generated validator modules that differ from the code (missing counts as different). */
export function driftedValidators(root = ROOT): string[] {
  return validatorFiles()
    .filter((f) => !existsSync(join(root, f.path)) || readFileSync(join(root, f.path), 'utf8') !== f.content)
    .map((f) => f.path);
}

function isMain(): boolean {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  if (process.argv.includes('--check')) {
    const drifted = [...driftedSchemas().map((n) => `schemas/${n}`), ...driftedValidators()];
    if (drifted.length) {
      console.error(`schemas out of date: ${drifted.join(', ')}; run \`npm run gen-schemas\``);
      process.exit(1);
    }
    console.log('schemas up to date');
  } else {
    mkdirSync(SCHEMAS_DIR, { recursive: true });
    for (const f of schemaFiles()) writeFileSync(join(SCHEMAS_DIR, f.name), f.content);
    for (const f of validatorFiles()) writeFileSync(join(ROOT, f.path), f.content);
    console.log(
      `wrote ${[...schemaFiles().map((f) => `schemas/${f.name}`), ...validatorFiles().map((f) => f.path)].join(', ')}`,
    );
  }
}
