/**
 * The multi-turn tasks of the provider-limits tests: a prompt saying `turns N` is answered by calls of the `step` tool
 * until N − 1 steps are done, then by `done`; each reply reports the request's input tokens as the mock counts them.
 */
import { defineTool } from '../../activities/tools/define-tool.js';
import { inputTokensOf } from './limits.js';
import type { MockStep } from './script.js';

/** The tool a task's turns but its last call: answers `stepped`. */
export const stepTool = defineTool({
  name: 'step',
  description: 'Takes one step.',
  parameters: { type: 'object', properties: {} },
  execute: async () => ({ content: [{ type: 'text', text: 'stepped' }] }),
});

/** The mock's answer to `body` (each after `delayMs`, when given). */
export function turnsReply(body: { messages?: unknown }, delayMs?: number): MockStep {
  const usage = { input: inputTokensOf(body), output: 5 };
  const messages = JSON.stringify(body.messages ?? []);
  const turns = Number(/turns (\d+)/.exec(messages)?.[1] ?? 1);
  const steps = messages.split('"tool_result"').length - 1;
  const delay = delayMs === undefined ? {} : { delayMs };
  if (steps < turns - 1)
    return {
      reply: { blocks: [{ type: 'toolCall', id: `toolu_${steps}`, name: 'step', arguments: {} }], usage },
      ...delay,
    };
  return { reply: { blocks: [{ type: 'text', text: 'done' }], usage }, ...delay };
}
