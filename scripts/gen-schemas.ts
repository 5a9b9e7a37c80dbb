/**
 * Writes the JSON Schemas other languages use to start Keel runs (docs/architecture.md#run-input-and-result) into schemas/:
 *   agent-run-input.json   — `AgentRunInput`, the one argument of `agentWorkflow` (from common/run-input-schema.ts AGENT_RUN_INPUT_SCHEMA)
 *   agent-run-result.json  — `AgentRunResult`, its result (and the details of an `AgentRunFailed` failure)
 *   agent-batch-input.json — `AgentBatchInput`, the argument of `agentBatchWorkflow`
 *
 *   npx tsx scripts/gen-schemas.ts           regenerate
 *   npx tsx scripts/gen-schemas.ts --check   exit 1 when a file differs from the code (test/unit/cli-schemas.test.ts does the same)
 */
import { readFileSync, writeFileSync, mkdirSync, existsSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_BATCH_INPUT_SCHEMA } from '../common/batch-input-schema.js';
import { AGENT_RUN_INPUT_SCHEMA } from '../common/run-input-schema.js';
import { AGENT_RUN_RESULT_SCHEMA } from '../common/run-result-schema.js';

export const SCHEMAS_DIR = fileURLToPath(new URL('../schemas/', import.meta.url));
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

function isMain(): boolean {
  try {
    return !!process.argv[1] && realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
  } catch {
    return false;
  }
}

if (isMain()) {
  if (process.argv.includes('--check')) {
    const drifted = driftedSchemas();
    if (drifted.length) {
      console.error(`schemas out of date: ${drifted.join(', ')}; run \`npm run gen-schemas\``);
      process.exit(1);
    }
    console.log('schemas up to date');
  } else {
    mkdirSync(SCHEMAS_DIR, { recursive: true });
    for (const f of schemaFiles()) writeFileSync(join(SCHEMAS_DIR, f.name), f.content);
    console.log(
      `wrote ${schemaFiles()
        .map((f) => `schemas/${f.name}`)
        .join(', ')}`,
    );
  }
}
