/**
 * docs/architecture.md#heartbeats: a tool's `onUpdate` goes out as activity heartbeat details (Pi's tool_execution_update), never into
 * history; a client sees it live.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historyText, startKeel, until, type Keel } from './harness.js';
import { progressTool, toolHeartbeat } from './tool-fixtures.js';

const { tool: progress, steps } = progressTool();

describe('tool progress reaches heartbeats (ref A.5-14 on Temporal)', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      scripts: {
        p: {
          rules: [
            { match: 'toolResult:progress', text: 'finished' },
            { toolCalls: [{ id: 'tool-1', name: 'progress', arguments: { job: 'build' } }] },
          ],
        },
      },
      tools: [progress],
    });
  });
  afterAll(() => keel?.stop());

  it('each onUpdate is visible to a client as the tool activity heartbeat; history keeps only the final result', async () => {
    const h = await keel.start({ model: 'scripted/p', prompt: 'run the job', tools: ['progress'] });
    const seen = (step: number) => async () => (await toolHeartbeat(h))?.updates === step;
    await until(seen(1), 20_000, 'first update');
    expect(await toolHeartbeat(h)).toEqual({
      kind: 'tool',
      toolCallId: 'tool-1',
      toolName: 'progress',
      args: { job: 'build' },
      partialResult: { content: [{ type: 'text', text: 'step 1 of 2' }], details: { step: 1 } },
      updates: 1,
    });
    steps[0].open();
    await until(seen(2), 20_000, 'second update');
    expect((await toolHeartbeat(h))?.partialResult).toEqual({
      content: [{ type: 'text', text: 'step 2 of 2' }],
      details: { step: 2 },
    });
    steps[1].open();
    const r = await h.result();
    expect(r.finalText).toBe('finished');
    const history = historyText(await h.workflow.fetchHistory());
    expect(history).toContain('job done');
    expect(history).not.toContain('step 1 of 2');
  });
});
