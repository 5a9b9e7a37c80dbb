/**
 * Typed results' checks without a server (docs/runs.md "Typed results"): the `checkRunOutput` activity's verdicts and
 * texts, `startRun`'s line for an `output` that is not a JSON Schema, the sub-agents' check unchanged beside it, and
 * the json-schema grader on a typed output.
 */
import { describe, expect, it } from 'vitest';
import { Type } from 'typebox';
import { checkRunOutput, checkSubAgentOutput, outputSchemaProblem } from '../../activities/agents/check-output.js';
import { BUILTIN_GRADER_DEFINITIONS } from '../../activities/graders.js';
import { emptyUsage } from '../../common/messages.js';
import type { AgentRunResult } from '../../common/run.js';
import { invalidAgentOutput, outputRepairRequest } from '../../common/typed-output.js';

const schema = Type.Object({ n: Type.Number(), tags: Type.Array(Type.String()) });

describe('checkRunOutput', () => {
  it('a valid answer, fenced or not, is the parsed value', async () => {
    expect(await checkRunOutput({ text: '{"n": 1, "tags": []}', schema })).toEqual({
      ok: true,
      value: { n: 1, tags: [] },
    });
    expect(await checkRunOutput({ text: '```json\n{"n": 2, "tags": ["a"]}\n```', schema })).toEqual({
      ok: true,
      value: { n: 2, tags: ['a'] },
    });
  });

  it('an answer that is not JSON, or of the wrong shape, gets the exact texts the model is sent', async () => {
    const parseError = (() => {
      try {
        return JSON.parse('n is 1') as string;
      } catch (err) {
        return (err as Error).message; // V8's own words, which differ between Node versions
      }
    })();
    expect(await checkRunOutput({ text: 'n is 1', schema })).toEqual({
      ok: false,
      error: `Final answer is not valid JSON: ${parseError}`,
    });
    expect(await checkRunOutput({ text: '{"n": "1", "tags": [3]}', schema })).toEqual({
      ok: false,
      error: 'Final answer failed validation:\n  - n: must be number\n  - tags.0: must be string',
    });
    expect(outputRepairRequest('Final answer failed validation:\n  - n: must be number', 2, 3)).toBe(
      "Final answer failed validation:\n  - n: must be number\nReply with only the corrected JSON, valid against the run's output schema (repair 2 of 3).",
    );
    expect(invalidAgentOutput('Final answer is not valid JSON: x', 2)).toBe(
      'Final answer is not valid JSON: x\nNo valid output after 2 repairs: the run failed without a result. Raise outputRepairs, or make the prompt or the output schema clearer to the model.',
    );
  });

  it('startRun refuses an output that is not a JSON Schema; a TypeBox schema is one', () => {
    expect(outputSchemaProblem(schema)).toBeUndefined();
    expect(outputSchemaProblem(undefined)).toBeUndefined();
    expect(outputSchemaProblem({ type: 'nonsense' })).toMatch(
      /^output: must be a JSON Schema: schema is invalid: data\/type must be equal to one of the allowed values/,
    );
  });

  it("the sub-agents' check keeps its own words", async () => {
    expect(
      await checkSubAgentOutput({ name: 'counter', text: '{"n": "1", "tags": []}', schema: { ...schema } }),
    ).toEqual({
      ok: false,
      error: 'Sub-agent "counter" output failed validation:\n  - n: must be number',
    });
  });
});

describe('the json-schema grader', () => {
  const result = (over: Partial<AgentRunResult>): AgentRunResult => ({
    status: 'completed',
    finalText: '',
    newMessages: [],
    usage: emptyUsage(),
    turns: 1,
    ...over,
  });
  const grade = (r: AgentRunResult, expected: object) =>
    BUILTIN_GRADER_DEFINITIONS['json-schema']({
      task: { model: 'scripted/x', expected },
      result: r,
      transcript: [],
      workflowId: 'w',
      repeat: 0,
    });

  it('judges the typed output when the run has one, else the final text', () => {
    const expected = { type: 'object', required: ['n'] };
    expect(grade(result({ finalText: 'not JSON', output: { n: 1 } }), expected)).toEqual({
      score: 1,
      pass: true,
      reason: 'the typed output is valid against the schema',
    });
    expect(grade(result({ finalText: '{"n": 1}' }), expected)).toEqual({
      score: 1,
      pass: true,
      reason: 'valid against the schema',
    });
    expect(grade(result({ output: { m: 1 } }), expected)).toEqual({
      score: 0,
      pass: false,
      reason: "answer must have required property 'n'",
    });
  });
});
