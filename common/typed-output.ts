/**
 * Typed final results (docs/runs.md "Typed results"): a run given an `output` JSON Schema must end with a final answer
 * that is JSON valid against it. The texts the model and the operator see, and the default number of repairs.
 * Sandbox-safe (plain strings): the workflow, the `checkRunOutput` activity and the tests share them.
 */

/** Repairs a run gets when it has no `outputRepairs`: after this many invalid answers are sent back, the run fails. */
export const DEFAULT_OUTPUT_REPAIRS = 2;

/** A final answer that does not parse as JSON (JSON.parse's message). */
export const finalAnswerNotJson = (message: string): string => `Final answer is not valid JSON: ${message}`;

/** A final answer that parses but fails the `output` schema: one `  - <path>: <message>` line per problem. */
export const finalAnswerInvalid = (problems: string): string => `Final answer failed validation:\n${problems}`;

/**
 * The user message a run sends the model after an invalid final answer: what is wrong, and that it may try again
 * (`repair` of `of`, 1-based).
 */
export const outputRepairRequest = (error: string, repair: number, of: number): string =>
  `${error}\nReply with only the corrected JSON, valid against the run's output schema (repair ${repair} of ${of}).`;

/**
 * The message of `InvalidAgentOutput`: the last answer's problem, and what the operator can do. `repairs`: how many
 * repairs were sent before it.
 */
export const invalidAgentOutput = (error: string, repairs: number): string =>
  `${error}\nNo valid output after ${repairs} ${repairs === 1 ? 'repair' : 'repairs'}: the run failed without a result. ` +
  `Raise outputRepairs, or make the prompt or the output schema clearer to the model.`;
