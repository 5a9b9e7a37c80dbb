/**
 * Turn numbers agree (issue 20 item 15): during the first turn the details say `turn 1`, the state query `turn: 1`,
 * `keel status` `turn 1 in progress`, as `keel run` / `keel watch` print `turn 1`; `keel watch` numbers the turns of
 * the whole conversation (a session's second agent run goes on at `turn 3`, not `turn 1` again).
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../activities/tools/define-tool.js';
import { keelCli } from './cli-child.js';
import { gate, startKeel, until, workflowTaskFailures, type Keel } from './harness.js';

let hold = gate();
const holdTool = defineTool({
  name: 'hold',
  description: 'Waits until the test releases it.',
  parameters: { type: 'object', properties: {} },
  execute: async () => {
    await hold.promise;
    return { content: [{ type: 'text', text: 'held' }] };
  },
});

describe('turn numbers', () => {
  let keel: Keel;
  beforeAll(async () => {
    keel = await startKeel({
      scripts: {
        turns: {
          rules: [
            { match: 'toolResult:hold', text: 'hold returned' },
            { match: 'hold', toolCalls: [{ id: 'h1', name: 'hold', arguments: {} }] },
            { text: 'more, as asked' },
          ],
        },
      },
      tools: [holdTool],
    });
  });
  afterAll(() => keel?.stop());

  it('details, state, keel status and keel watch say the same turn', async () => {
    hold = gate();
    const id = `turns-${randomUUID()}`;
    const h = await keel.start({ model: 'scripted/turns', prompt: 'hold it', tools: ['hold'], mode: 'session' }, id);
    await until(async () => (await h.state()).runningTools.length === 1, 20_000, 'hold running');
    const details = async () =>
      ((await h.workflow.query('__temporal_workflow_metadata')) as { currentDetails?: string }).currentDetails ?? '';
    expect((await details()).split('\n')[0]).toBe('**running** · turn 1 · 2 messages');
    const st = await h.state();
    expect([st.turn, st.turns]).toEqual([1, 0]);
    const conn = ['--address', keel.address, '--task-queue', keel.taskQueue];
    const status = await keelCli([...conn, 'status', id]);
    expect(status.stdout.split('\n')[1]).toBe(
      'model scripted/turns · mode session · turn 1 in progress · 1 agent run · 2 messages',
    );
    hold.open();
    await until(async () => (await h.state()).status === 'waiting', 20_000, 'waiting');
    // between turns: the turns done, and no turn in progress
    expect((await details()).split('\n')[0]).toBe('**waiting** · turn 2 · 4 messages');
    expect((await h.state()).turn).toBeUndefined();
    await h.followUp('more please');
    expect(await h.end()).toEqual({ status: 'completed' });
    const watch = await keelCli([...conn, 'watch', id]);
    expect(watch.stdout.split('\n').filter((l) => l.startsWith('turn '))).toEqual(['turn 1', 'turn 2', 'turn 3']);
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});
