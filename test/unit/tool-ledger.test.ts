/** worker/tool-ledger.ts without Temporal: which attempts run the tool, which are answered from the ledger. */
import { describe, expect, it } from 'vitest';
import { defineTool, type ToolContext, type ToolDefinition } from '../../activities/tools/define-tool.js';
import { toolInterrupted } from '../../common/errors.js';
import { ToolLedger, withLedger } from '../../worker/tool-ledger.js';

/** Attempt `n` of the call `wf/d1` of `tool`. */
function attemptsOf(tool: ToolDefinition) {
  return (attempt: number) =>
    tool.execute('d1', {}, new AbortController().signal, () => {}, {
      workflowId: 'wf',
      runId: 'run',
      idempotencyKey: 'wf/d1',
      attempt,
    } as ToolContext);
}

function counted(idempotent: boolean, release?: Promise<void>, ledger = new ToolLedger()) {
  const runs: number[] = [];
  const tool = defineTool<Record<string, never>>({
    name: 'deploy',
    description: 'Deploys.',
    parameters: { type: 'object', properties: {} },
    idempotent,
    workerLocal: true,
    async execute(_id, _args, _signal, _onUpdate, ctx) {
      runs.push(ctx.attempt);
      await release;
      return { content: [{ type: 'text', text: `ran on attempt ${ctx.attempt}` }] };
    },
  });
  const [wrapped] = withLedger([tool as ToolDefinition], ledger);
  return { runs, call: attemptsOf(wrapped) };
}

describe('tool ledger', () => {
  it('answers a retry from the recorded outcome', async () => {
    const { runs, call } = counted(false);
    await call(1);
    expect(await call(2)).toEqual({ content: [{ type: 'text', text: 'ran on attempt 1' }] });
    expect(runs).toEqual([1]);
  });

  it('runs a non-idempotent tool on a retry only when no attempt reached it here', async () => {
    const { runs, call } = counted(false);
    expect(await call(2)).toEqual({ content: [{ type: 'text', text: 'ran on attempt 2' }] });
    expect(await call(3)).toEqual({ content: [{ type: 'text', text: 'ran on attempt 2' }] });
    expect(runs).toEqual([2]);
  });

  it('a non-idempotent tool that threw throws the same error on a retry, without running again', async () => {
    let runs = 0;
    const tool = defineTool<Record<string, never>>({
      name: 'deploy',
      description: 'Deploys.',
      parameters: { type: 'object', properties: {} },
      workerLocal: true,
      async execute() {
        runs += 1;
        throw new Error('deploy failed');
      },
    });
    const [wrapped] = withLedger([tool as ToolDefinition], new ToolLedger());
    const call = attemptsOf(wrapped);
    await expect(call(1)).rejects.toThrow('deploy failed');
    await expect(call(2)).rejects.toThrow('deploy failed');
    expect(runs).toBe(1);
  });

  it('a non-idempotent call started here without an outcome kept is interrupted on a retry', async () => {
    const ledger = new ToolLedger();
    const { runs, call } = counted(false, undefined, ledger);
    ledger.markStarted('wf/d1'); // as if an attempt had started it and its outcome was lost
    await expect(call(2)).rejects.toThrow(toolInterrupted('deploy'));
    expect(runs).toEqual([]);
  });

  it('runs an idempotent tool again when nothing was recorded', async () => {
    const { runs, call } = counted(true);
    expect(await call(2)).toEqual({ content: [{ type: 'text', text: 'ran on attempt 2' }] });
    expect(runs).toEqual([2]);
  });

  it('a retry while the first attempt still runs here waits for its outcome', async () => {
    let open!: () => void;
    const { runs, call } = counted(false, new Promise<void>((r) => (open = r)));
    const first = call(1);
    const retry = call(2);
    open();
    expect(await retry).toEqual({ content: [{ type: 'text', text: 'ran on attempt 1' }] });
    expect(await first).toEqual({ content: [{ type: 'text', text: 'ran on attempt 1' }] });
    expect(runs).toEqual([1]);
  });
});
