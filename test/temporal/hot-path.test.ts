/**
 * The hot path's budget (issue 22 item 7): the promises a steady turn's workflow code creates. The SDK captures a
 * source-mapped stack trace for every promise created in a workflow (its stack-trace query), so they are most of the
 * workflow code's CPU; the bench prints them per turn beside the engine floor's (bench/replay-cost.ts). This test keeps
 * a steady turn (one model call and one no-op tool call) within the budget, counted by replaying the histories of two
 * runs that differ by 20 turns.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { replayPromises } from '../../bench/replay-cost.js';
import { startKeel, type Keel } from './harness.js';

const TURNS = 20;
/**
 * At most this many promises per steady turn: 0.4.2 created 22 (the activity scope's async `runInContext` added two
 * per activity, workflows/agent/session.ts; `track` and `prepareAndExecute` in workflows/agent/tool-batch.ts one
 * each per tool call); 0.7.0 about 18 (async functions awaiting each other: the model step, the tool batch); 0.8.0
 * about 10 (one `then` per activity, workflows/agent/model-step.ts and tool-batch.ts); the engine floor (two
 * activities awaited in a loop) creates about 6.5. Lower it as the turn gets cheaper.
 */
const PROMISES_PER_TURN = 11;

const noop = defineTool({
  name: 'noop',
  description: 'Does nothing.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'ok' }] }),
});

describe('hot path', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      scripts: { noop: { rules: [{ toolCall: { name: 'noop', arguments: {} } }] } },
      tools: [noop],
    });
  });
  afterAll(() => keel?.stop());

  /** Promises the workflow code creates replaying a run of `turns` turns. */
  async function promisesOfRun(turns: number): Promise<number> {
    const h = await keel.start({ model: 'scripted/noop', prompt: 'go', tools: ['noop'], maxTurns: turns });
    const r = await h.result();
    expect([r.status, r.turns]).toEqual(['stopped', turns]);
    return replayPromises(inject('workflowBundlePath'), await h.workflow.fetchHistory(), h.workflowId);
  }

  it(`a steady turn's workflow code creates at most ${PROMISES_PER_TURN} promises`, async () => {
    // the difference of two runs: the run's start and end cancel out
    const short = await promisesOfRun(5);
    const long = await promisesOfRun(5 + TURNS);
    expect((long - short) / TURNS).toBeLessThanOrEqual(PROMISES_PER_TURN);
  });
});
