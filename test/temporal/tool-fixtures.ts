/**
 * Tools that several test files define alike (a big result `blob`, a two-step progress reporter, a held call), and the
 * heartbeat a running tool call reports.
 */
import { defaultPayloadConverter } from '@temporalio/common';
import { defineTool } from '../../activities/tools/define-tool.js';
import type { AgentRunHandle } from '../../client/agent-client.js';
import type { ToolHeartbeat } from '../../common/events.js';
import { gate } from './harness.js';

/** `blob({kb, n})`: `n:` padded with `x` to `kb` kilobytes; idempotent (retried freely). */
export const blobTool = defineTool({
  name: 'blob',
  description: 'Returns `kb` kilobytes of text.',
  idempotent: true,
  parameters: {
    type: 'object',
    properties: { kb: { type: 'integer' }, n: { type: 'integer' } },
    required: ['kb', 'n'],
  },
  execute: async (_id, args: { kb: number; n: number }) => ({
    content: [{ type: 'text', text: `${args.n}:`.padEnd(args.kb * 1024, 'x') }],
  }),
});

/**
 * `progress({job})`: reports `step 1 of 2` (details {step: 1}), waits for `steps[0]`, reports `step 2 of 2`, waits for
 * `steps[1]`, then returns `job done`. Open the steps from the test.
 */
export function progressTool() {
  const steps = [gate(), gate()];
  const tool = defineTool({
    name: 'progress',
    description: 'Reports two steps of progress.',
    parameters: { type: 'object', properties: { job: { type: 'string' } }, required: ['job'] },
    execute: async (_id, _args, _signal, onUpdate) => {
      onUpdate({ content: [{ type: 'text', text: 'step 1 of 2' }], details: { step: 1 } });
      await steps[0].promise;
      onUpdate({ content: [{ type: 'text', text: 'step 2 of 2' }], details: { step: 2 } });
      await steps[1].promise;
      return { content: [{ type: 'text', text: 'job done' }] };
    },
  });
  return { tool, steps };
}

/** `hold({})`: returns `released` once `released` is opened by the test, or at once when the call is aborted. */
export function holdTool(released: { promise: Promise<void> }) {
  return defineTool({
    name: 'hold',
    description: 'Waits until the test releases it, or the call is aborted.',
    parameters: { type: 'object', properties: {} },
    execute: async (_id, _args, signal) => {
      await Promise.race([released.promise, new Promise((r) => signal?.addEventListener('abort', r))]);
      return { content: [{ type: 'text', text: 'released' }] };
    },
  });
}

/** The heartbeat details of the run's pending tool call (`runToolCall`), when it has sent one. */
export async function toolHeartbeat(h: AgentRunHandle): Promise<ToolHeartbeat | undefined> {
  const pending = (await h.workflow.describe()).raw.pendingActivities ?? [];
  const payload = pending.find((a) => a.activityType?.name === 'runToolCall')?.heartbeatDetails?.payloads?.[0];
  return payload ? defaultPayloadConverter.fromPayload<ToolHeartbeat>(payload) : undefined;
}
