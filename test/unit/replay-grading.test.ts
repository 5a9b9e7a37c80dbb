/**
 * The graded side of a replay's report (client/replay/replay-grading.ts): the originals graded here with the same
 * built-in grader (a run that did not run fails its grade, as in a batch), a grader this client lacks leaves old
 * ungraded and says why, and a batch's variants and repeats are kept: pass@k and per-variant runs count the original's
 * slots, graded or not.
 */
import { describe, expect, it } from 'vitest';
import { defineGrader } from '../../activities/graders.js';
import type { AgentBatchResult, BatchTaskResult } from '../../common/batch-definitions.js';
import { emptyUsage } from '../../common/messages.js';
import { replayGrading, type ReplayGradingPlan } from '../../client/replay/replay-grading.js';
import type { RecordedRun } from '../../client/replay/recorded-run.js';

const run = (workflowId: string, finalText: string, status = 'completed'): RecordedRun => ({
  workflowId,
  status,
  messages: [],
  finalText,
  turns: status === 'completed' ? 1 : 0,
  usage: emptyUsage(),
});
const batch = (extra: Partial<AgentBatchResult> = {}): AgentBatchResult =>
  ({
    total: 0,
    done: 0,
    failed: 0,
    byStatus: {},
    tokens: 0,
    cost: 0,
    continuedAsNew: 0,
    failures: [],
    ...extra,
  }) as AgentBatchResult;
const slot = (index: number, pass?: boolean): BatchTaskResult => ({
  index,
  workflowId: `r-${index}`,
  status: 'completed',
  turns: 1,
  tokens: 0,
  cost: 0,
  ...(pass !== undefined ? { grade: { pass, score: pass ? 1 : 0 } } : {}),
});
const plain = (tasks: ReplayGradingPlan['tasks'], extra: Partial<ReplayGradingPlan> = {}): ReplayGradingPlan => ({
  shape: {},
  tasks,
  regrade: true,
  ...extra,
});

describe('replay grading', () => {
  it('grades the originals with the same built-in grader; one that did not run fails its grade', async () => {
    const task = { model: 'm', grader: 'includes', expected: 'yes' };
    const g = await replayGrading(
      plain([task, task, task]),
      [run('a', 'yes'), run('b', 'no'), run('c', 'yes', 'failed')],
      [],
      batch(),
    );
    expect(g.grading?.old).toMatchObject({ graded: 3, passed: 1, passAtK: { k: 1, tasks: 3, passed: 1 } });
    expect(g.oldNotGraded).toBeUndefined();
  });

  it('a grader this client lacks: old is not graded and says why; in `graders`, it grades here', async () => {
    const task = { model: 'm', grader: 'mine' };
    const without = await replayGrading(plain([task]), [run('a', 'x')], [], batch());
    expect(without.grading).toBeUndefined();
    expect(without.oldNotGraded).toBe(
      "grader mine is not a built-in: pass it in replay's graders option to grade the originals",
    );
    const mine = defineGrader({ name: 'mine', grade: ({ result }) => ({ score: 1, pass: result.finalText === 'x' }) });
    const withIt = await replayGrading(plain([task], { graders: [mine] }), [run('a', 'x')], [], batch());
    expect(withIt.grading?.old).toMatchObject({ graded: 1, passed: 1 });
  });

  it('variants and repeats: new is summed in the original shape, graded or not', async () => {
    const shape = { variants: [{ name: 'a' }, { name: 'b' }], repeat: 2 };
    const tasks = Array.from({ length: 4 }, () => ({ model: 'm' }));
    const originals = tasks.map((_, i) => run(`o-${i}`, 'x'));
    // slots task-major: task 0 a-r0, a-r1, b-r0, b-r1
    const graded = await replayGrading(
      { shape, tasks, regrade: false },
      originals,
      [slot(0, false), slot(1, true), slot(2, false), slot(3, false)],
      batch({ grading: { graded: 4 } as AgentBatchResult['grading'] }),
    );
    expect(graded.grading?.new).toMatchObject({ graded: 4, passed: 1, passAtK: { k: 2, tasks: 2, passed: 1 } });
    expect(graded.variants?.new?.map((v) => [v.name, v.runs, v.grading?.passAtK.passed])).toEqual([
      ['a', 2, 1],
      ['b', 2, 0],
    ]);
    const ungraded = await replayGrading(
      { shape, tasks, regrade: false },
      originals,
      [0, 1, 2, 3].map((i) => slot(i)),
      batch(),
    );
    expect(ungraded.grading).toBeUndefined();
    expect(ungraded.variants?.new?.map((v) => [v.name, v.runs, v.done])).toEqual([
      ['a', 2, 2],
      ['b', 2, 2],
    ]);
  });
});
