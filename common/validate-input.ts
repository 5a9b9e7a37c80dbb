import { Ajv, type ErrorObject } from 'ajv';
import { nestedTooDeep, tooDeep } from './nesting.js';
import { AGENT_RUN_INPUT_SCHEMA } from './run.js';

let validator: ReturnType<Ajv['compile']> | undefined;

/**
 * Checks an `AgentRunInput` against its JSON Schema. Returns one line per bad field (`maxTurns: must be >= 1`),
 * every field at once; empty when valid.
 */
export function agentRunInputErrors(input: unknown): string[] {
  const deep = tooDeep(input);
  if (deep !== undefined) return [nestedTooDeep(deep)]; // before anything recursive: no RangeError
  validator ??= new Ajv({ allErrors: true, strict: false }).compile(AGENT_RUN_INPUT_SCHEMA);
  if (validator(input)) return [];
  const lines = (validator.errors ?? []).filter(meaningful).map(describe);
  return [...new Set(lines)];
}

/** anyOf/if-then wrappers repeat what their branches already said. */
function meaningful(e: ErrorObject): boolean {
  return e.keyword !== 'if' && !(e.keyword === 'anyOf' && e.instancePath === '/prompt');
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

function describe(e: ErrorObject): string {
  const path = e.instancePath ? e.instancePath.slice(1).replace(/\//g, '.') : '';
  if (DURATION_FIELDS.has(path))
    return `${path}: must be a duration: milliseconds (an integer >= 1) or a string such as "30s", "5m", "1h", "2d"`;
  if (e.keyword === 'additionalProperties') {
    const field = [path, String((e.params as { additionalProperty: string }).additionalProperty)]
      .filter(Boolean)
      .join('.');
    return `${field}: unknown field`;
  }
  if (e.keyword === 'required') {
    const field = [path, String((e.params as { missingProperty: string }).missingProperty)].filter(Boolean).join('.');
    return `${field}: is required`;
  }
  if (path === 'model' && e.keyword === 'pattern')
    return 'model: must be "provider/model-id", e.g. "anthropic/claude-sonnet-4-5" or "scripted/demo"';
  if (e.keyword === 'enum')
    return `${path || 'input'}: must be one of ${(e.params as { allowedValues: unknown[] }).allowedValues.map((v) => JSON.stringify(v)).join(', ')}`;
  return `${path || 'input'}: ${e.message ?? 'is invalid'}`;
}
