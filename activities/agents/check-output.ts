/**
 * Local activity `checkSubAgentOutput`: a typed sub-agent's final text parsed as JSON and validated against its
 * `output` schema with ajv (the same validator and error lines as tool arguments; no ajv in the workflow).
 */
import type { ValidateFunction } from 'ajv';
import { subAgentOutputInvalid, subAgentOutputNotJson } from '../../common/tree/sub-agents.js';
import type { CheckSubAgentOutputInput, CheckSubAgentOutputResult } from '../../common/wire.js';
import { getEntry } from '../tools/argument-schemas.js';
import { formatValidationErrors } from '../tools/validation-errors.js';

export async function checkSubAgentOutput(input: CheckSubAgentOutputInput): Promise<CheckSubAgentOutputResult> {
  let value: unknown;
  try {
    value = JSON.parse(stripFence(input.text));
  } catch (err) {
    return { ok: false, error: subAgentOutputNotJson(input.name, (err as Error).message) };
  }
  const entry = getEntry({ name: input.name, parameters: input.schema });
  if (entry.error !== undefined || !entry.validate)
    return { ok: false, error: `Invalid output schema for sub-agent "${input.name}": ${entry.error ?? 'unknown'}` };
  const validate = entry.validate as ValidateFunction;
  if (validate(value)) return { ok: true, value };
  return { ok: false, error: subAgentOutputInvalid(input.name, formatValidationErrors(validate.errors)) };
}

/** A reply wrapped in one Markdown code fence (```json … ```) is read without the fence. */
function stripFence(text: string): string {
  const m = /^\s*```[a-zA-Z]*\n([\s\S]*?)\n```\s*$/.exec(text);
  return m ? m[1] : text;
}
