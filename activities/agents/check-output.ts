/**
 * Output checks: a final text parsed as JSON and validated against an `output` schema with ajv (the same validator and
 * error lines as tool arguments; no ajv in the workflow). Local activities `checkSubAgentOutput` (a typed sub-agent's
 * answer, README "Sub-agents") and `checkRunOutput` (a run's own final answer, docs/runs.md "Typed results").
 */
import type { ValidateFunction } from 'ajv';
import { subAgentOutputInvalid, subAgentOutputNotJson } from '../../common/tree/sub-agents.js';
import { finalAnswerInvalid, finalAnswerNotJson } from '../../common/typed-output.js';
import type { CheckOutputResult, CheckRunOutputInput, CheckSubAgentOutputInput } from '../../common/wire.js';
import { getEntry, schemaCompileError } from '../tools/argument-schemas.js';
import { formatValidationErrors } from '../tools/validation-errors.js';

/** The words of one output check: the line for a text that is not JSON, and for a value the schema refuses. */
interface OutputWording {
  notJson(message: string): string;
  invalid(problems: string): string;
}

export async function checkSubAgentOutput(input: CheckSubAgentOutputInput): Promise<CheckOutputResult> {
  return checkOutput(input.text, input.name, input.schema, {
    notJson: (m) => subAgentOutputNotJson(input.name, m),
    invalid: (p) => subAgentOutputInvalid(input.name, p),
  });
}

/** A run's final answer against its `output` schema (`startRun` refused a schema that does not compile). */
export async function checkRunOutput(input: CheckRunOutputInput): Promise<CheckOutputResult> {
  return checkOutput(input.text, 'output', input.schema, { notJson: finalAnswerNotJson, invalid: finalAnswerInvalid });
}

/** `startRun`'s line for a run input whose `output` is not a JSON Schema ajv compiles; undefined when it is one. */
export function outputSchemaProblem(schema: unknown): string | undefined {
  if (schema === undefined) return undefined;
  const problem = schemaCompileError(schema as object);
  return problem === undefined ? undefined : `output: must be a JSON Schema: ${problem}`;
}

/**
 * `text` (a single Markdown code fence around it is read without the fence) parsed, then validated against `schema`
 * (a schema that does not compile throws, naming `name`).
 */
function checkOutput(text: string, name: string, schema: object, words: OutputWording): CheckOutputResult {
  let value: unknown;
  try {
    value = JSON.parse(stripFence(text));
  } catch (err) {
    return { ok: false, error: words.notJson((err as Error).message) };
  }
  const validate = getEntry({ name, parameters: schema }).validate as ValidateFunction;
  if (validate(value)) return { ok: true, value };
  return { ok: false, error: words.invalid(formatValidationErrors(validate.errors)) };
}

/** A reply wrapped in one Markdown code fence (```json … ```) is read without the fence. */
function stripFence(text: string): string {
  const m = /^\s*```[a-zA-Z]*\n([\s\S]*?)\n```\s*$/.exec(text);
  return m ? m[1] : text;
}
