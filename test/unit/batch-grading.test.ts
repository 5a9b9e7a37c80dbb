/** The slots of a batch with variants and repeats (common/grading.ts) and the verdicts it carries (workflows/batch/grading.ts). */
import { describe, expect, it } from 'vitest';
import { childIdPattern, childTask, graderOf, slotChildId, slotOf } from '../../common/grading.js';
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
