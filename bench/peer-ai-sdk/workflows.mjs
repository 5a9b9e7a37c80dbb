// The peer's agent workflow, written as a user of @temporalio/ai-sdk would: the AI SDK's own `generateText` loop in
// the workflow, the model through `temporalProvider` (each model call is the plugin's `invokeModel` activity, where
// the real provider, here the mock, runs) and the tool's `execute` a Temporal activity. Bundled by the peer's worker
// (worker.mjs) with AiSdkPlugin, which adds the Web-API polyfills the AI SDK needs in the workflow sandbox.
// Plain JavaScript: it resolves @temporalio/* 1.23.0 from the peer's own install, not the repo's (see bench/peer.ts).
import { temporalProvider } from '@temporalio/ai-sdk/workflow';
import { proxyActivities } from '@temporalio/workflow';
import { generateText, jsonSchema, stepCountIs, tool } from 'ai';

const { noop } = proxyActivities({ startToCloseTimeout: '1 minute' });

/**
 * `turns` tool-calling steps, then the model's final text: the mock model (worker.mjs) calls the no-op tool until the
 * transcript holds `turns` tool results. `stopWhen` is the loop's bound, as Keel's `maxTurns`.
 * @param {number} turns
 */
export async function peerAgentWorkflow(turns) {
  const result = await generateText({
    model: temporalProvider.languageModel(`bench-noop-${turns}`),
    prompt: 'go',
    tools: {
      noop: tool({
        description: 'Does nothing.',
        inputSchema: jsonSchema({ type: 'object', properties: {} }),
        execute: async () => noop(),
      }),
    },
    stopWhen: stepCountIs(turns + 1),
  });
  return {
    steps: result.steps.length,
    toolCalls: result.steps.reduce((n, s) => n + s.toolCalls.length, 0),
    finishReason: result.finishReason,
    text: result.text,
  };
}
