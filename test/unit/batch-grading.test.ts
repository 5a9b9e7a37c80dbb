/** The slots of a batch with variants and repeats (common/grading.ts) and the verdicts it carries (workflows/batch/grading.ts). */
import { describe, expect, it } from 'vitest';
import { BUILTIN_GRADER_DEFINITIONS } from '../../activities/graders.js';
import { batchTaskErrors } from '../../client/batch-client.js';
import type { AgentRunResult } from '../../common/run.js';
import { childIdPattern, childTask, graderOf, slotChildId, slotOf, type BatchTask } from '../../common/grading.js';
import { packGrades, unpackGrades, type SlotGrade } from '../../workflows/batch/grading.js';

describe('batch slots', () => {
  const shape = { variants: [{ name: 'a' }, { name: 'b', model: 'x/y' }], repeat: 2 };

  it('are task-major: every variant and attempt of a task, then the next task', () => {
    expect([0, 1, 2, 3, 4].map((s) => slotChildId('B', shape, s))).toEqual([
      'B-a-0-r0',
      'B-a-0-r1',
      'B-b-0-r0',
      'B-b-0-r1',
      'B-a-1-r0',
    ]);
    expect(slotOf(shape, 7)).toEqual({ task: 1, variant: 1, repeat: 1 });
    expect(slotChildId('B', { repeat: 3 }, 4)).toBe('B-1-r1');
    expect(slotChildId('B', { variants: [{ name: 'v1' }] }, 4)).toBe('B-v1-4');
    // a plain batch keeps the ids it always had
    expect(slotChildId('B', {}, 4)).toBe('B-4');
  });

  it('are named in static details by the pattern their ids follow', () => {
    expect(childIdPattern('B', shape)).toBe('B-<variant>-<index>-r<j>');
    expect(childIdPattern('B', { repeat: 3 })).toBe('B-<index>-r<j>');
    expect(childIdPattern('B', { variants: [{ name: 'v1' }] })).toBe('B-<variant>-<index>');
    expect(childIdPattern('B', {})).toBe('B-<index>');
  });

  it('give the child its task without expected and grader, with the variant applied', () => {
    expect(childTask({ model: 'm/1', prompt: 'p', expected: 'x', grader: 'regex' }, shape.variants[1])).toEqual({
      model: 'x/y',
      prompt: 'p',
    });
    expect(graderOf({ expected: 'x' })).toBe('exact');
    expect(graderOf({})).toBeUndefined();
  });
});

describe('packed verdicts', () => {
  it('round-trip at three characters a slot', () => {
    const grades: (SlotGrade | null)[] = [[1, 1], null, [2, 0], [3, 0], [1, 0.125], null];
    const packed = packGrades(grades);
    expect(packed).toBe('prs...f00e00p3h');
    expect(unpackGrades(packed)).toEqual(grades.slice(0, 5));
    expect(packGrades(Array.from({ length: 50_000 }, () => [1, 0.5] as SlotGrade)).length).toBe(150_000);
  });
});

describe('the exact grader (issue 33 item 20)', () => {
  const exact = (expected: string, finalText: string) =>
    BUILTIN_GRADER_DEFINITIONS.exact({
      task: { model: 'm/1', prompt: 'p', expected } as BatchTask,
      result: { finalText } as AgentRunResult,
      transcript: [],
      workflowId: 'B-0',
      repeat: 0,
    });

  it('compares the whole text with surrounding whitespace trimmed, and says so', async () => {
    expect(await exact('4', '4')).toEqual({ pass: true, score: 1, reason: 'exact match' });
    expect(await exact('4', '4\n')).toEqual({
      pass: true,
      score: 1,
      reason: 'exact match after trimming surrounding whitespace',
    });
    expect(await exact(' 4', '4 ')).toMatchObject({ pass: true });
    expect(await exact('4', 'The answer is 4.')).toEqual({
      pass: false,
      score: 0,
      reason: 'expected "4", got "The answer is 4." (compared with surrounding whitespace trimmed)',
    });
    // whitespace inside the text is compared as it is
    expect(await exact('a b', ' a  b\n')).toEqual({
      pass: false,
      score: 0,
      reason: 'expected "a b", got "a  b" (compared with surrounding whitespace trimmed)',
    });
  });
});

describe('a batch task with variants (issue 33 item 20)', () => {
  const variants = [
    { name: 'a', model: 'scripted/a' },
    { name: 'b', model: 'scripted/b', systemPrompt: 'Be brief.' },
  ];

  it('needs no model of its own when every variant names one', () => {
    expect(batchTaskErrors({ prompt: 'p', expected: '4' }, variants)).toEqual([]);
    expect(batchTaskErrors({ prompt: 'p', expected: '4' })).toEqual(['model: is required']);
  });

  it('names the variants a problem is limited to', () => {
    expect(batchTaskErrors({ prompt: 'p' }, [...variants, { name: 'c' }])).toEqual(['model: is required (variant c)']);
    expect(batchTaskErrors({ prompt: 'p', maxTurns: 0 }, variants)).toEqual(['maxTurns: must be >= 1']);
    expect(batchTaskErrors({ prompt: 'p', grader: '' }, variants)).toEqual([
      'grader: must be a grader name (exact, includes, regex, json-schema, tool-called, or one the worker registers)',
    ]);
  });
});
