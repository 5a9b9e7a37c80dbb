/**
 * Checks of a run's input against `AGENT_RUN_INPUT_SCHEMA` (common/run-input-schema.ts), on the code `npm run
 * gen-schemas` generates (no ajv compile at run time), worded as every refusal is (`validate-errors.ts`): the client,
 * the CLI and the `startRun` activity refuse with them. Its messages are those of common/message-schemas.ts, so a
 * malformed prompt entry reads as the same message sent by `followUp` does (`prompt.0.content: is required`).
 */
import type { ErrorObject } from 'ajv';
import { validateAgentRunInput } from './input-validator.generated.js';
import { nestedTooDeep, tooDeep } from './nesting.js';
import { check } from './validate-errors.js';

/**
 * Checks an `AgentRunInput` against its JSON Schema. Returns one line per bad field (`maxTurns: must be >= 1`),
 * every field at once; empty when valid.
 */
export function agentRunInputErrors(input: unknown): string[] {
  const deep = tooDeep(input);
  if (deep !== undefined) return [nestedTooDeep(deep)]; // before anything recursive: no RangeError
  return check(validateAgentRunInput, input, { wording: inputWording, userContent: /^prompt(\.\d+)?\.content\.\d+$/ });
}

/** Fields that take a duration: one line for them instead of the branches of their `anyOf`. */
const DURATION_FIELDS = new Set([
  'idleTimeout',
  'heartbeatTimeout',
  'homeWorkerTimeout',
  'approvalTimeout',
  'modelRetry.initialInterval',
  'modelRetry.maximumInterval',
]);

/** The input's own lines for fields whose generic line says too little. */
function inputWording(path: string, e: ErrorObject): string | undefined {
  if (DURATION_FIELDS.has(path))
    return 'must be a duration: milliseconds (an integer >= 1) or a string such as "30s", "5m", "1h", "2d"';
  if (path === 'model' && e.keyword === 'pattern')
    return 'must be "provider/model-id", e.g. "anthropic/claude-sonnet-4-5" or "scripted/demo"';
  if (path === 'prompt' && e.keyword === 'minItems') return 'must be text or a non-empty list of messages';
  return undefined;
}
