/**
 * OpenTelemetry tracing (worker/tracing.ts, worker/activity-telemetry.ts): spans collected by an in-memory exporter
 * form one tree per run — the workflow, its activities, and under them Keel's model-call spans (GenAI attributes) and
 * tool-call spans — and with maxCachedWorkflows 0 (every workflow task replays the history) no span is duplicated.
 */
import { randomUUID } from 'node:crypto';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { scriptedModel } from '../../activities/model/scripted.js';
import { createAgentWorker } from '../../worker/create-worker.js';
import { quietRuntime } from './harness.js';

const echo = defineTool<{ text: string }>({
  name: 'echo',
  description: 'Echoes text.',
  parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  execute: async (_id, args) => ({ content: [{ type: 'text', text: `echo: ${args.text}` }] }),
});
const script = {
  replies: [
    {
      toolCall: { name: 'echo', arguments: { text: 'ping' }, id: 'e1' },
      usage: { input: 10, output: 4, totalTokens: 14 },
    },
    // prompt-cache use: the OTel GenAI cache-token attributes (issue 36 item 6)
    { text: 'done', usage: { input: 20, output: 2, totalTokens: 22, cacheRead: 300, cacheWrite: 40 } },
  ],
};

describe('tracing', () => {
  it('one span tree per run, Keel spans under the activity spans, no duplicates on replay', async () => {
    quietRuntime();
    const exporter = new InMemorySpanExporter();
    const taskQueue = `tracing-${randomUUID()}`;
    const address = inject('temporalAddress');
    // no prebuilt bundle: the worker bundles Keel's workflows with the OpenTelemetry workflow interceptors
    const worker = await createAgentWorker({
      address,
      taskQueue,
      tools: [echo],
      models: { scripted: scriptedModel({ traced: script }) },
      tracing: { spanProcessor: new SimpleSpanProcessor(exporter) },
      maxCachedWorkflows: 0,
    });
    const running = worker.run();
    const client = await AgentClient.connect({ address, taskQueue });
    let workflowId: string;
    try {
      const h = await client.start({ model: 'scripted/traced', prompt: 'echo ping', tools: ['echo'] });
      workflowId = h.workflowId;
      expect((await h.result()).status).toBe('completed');
    } finally {
      await client.close();
      await worker.shutdown();
      await running;
    }

    const spans = exporter
      .getFinishedSpans()
      .filter((s) => s.spanContext().traceId === traceOf(exporter.getFinishedSpans(), workflowId));
    const byId = new Map(spans.map((s) => [s.spanContext().spanId, s]));
    expect(byId.size).toBe(spans.length); // no span exported twice
    const parentName = (s: ReadableSpan) => (s.parentSpanId ? byId.get(s.parentSpanId)?.name : undefined);
    const edges = spans.map((s) => `${parentName(s) ?? '(root)'} > ${s.name}`).sort();
    // transcript reads (QueryWorkflow:messages under a model call) depend on the worker's cache: not asserted
    expect(edges.filter((e) => !e.endsWith('> QueryWorkflow:messages'))).toEqual([
      '(root) > RunWorkflow:agentWorkflow',
      'RunActivity:callModel > chat scripted/traced',
      'RunActivity:callModel > chat scripted/traced',
      'RunActivity:runToolCall > execute_tool echo',
      'RunWorkflow:agentWorkflow > StartActivity:callModel',
      'RunWorkflow:agentWorkflow > StartActivity:callModel',
      'RunWorkflow:agentWorkflow > StartActivity:runToolCall',
      'RunWorkflow:agentWorkflow > StartActivity:startRun',
      'StartActivity:callModel > RunActivity:callModel',
      'StartActivity:callModel > RunActivity:callModel',
      'StartActivity:runToolCall > RunActivity:runToolCall',
      'StartActivity:startRun > RunActivity:startRun',
    ]);

    const chats = spans
      .filter((s) => s.name === 'chat scripted/traced')
      .sort((a, b) => Number(a.attributes['keel.turn']) - Number(b.attributes['keel.turn']));
    expect(chats.map((s) => s.attributes)).toEqual([
      expect.objectContaining({
        'gen_ai.operation.name': 'chat',
        'gen_ai.request.model': 'scripted/traced',
        'gen_ai.usage.input_tokens': 10,
        'gen_ai.usage.output_tokens': 4,
        'gen_ai.response.finish_reasons': ['toolUse'],
        'keel.cost_usd': 0,
      }),
      expect.objectContaining({
        'gen_ai.usage.input_tokens': 20,
        'gen_ai.usage.output_tokens': 2,
        'gen_ai.usage.cache_read.input_tokens': 300,
        'gen_ai.usage.cache_creation.input_tokens': 40,
        'gen_ai.response.finish_reasons': ['stop'],
      }),
    ]);
    expect(chats[0].attributes).not.toHaveProperty('gen_ai.usage.cache_read.input_tokens'); // none reported
    const tool = spans.find((s) => s.name === 'execute_tool echo')!;
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'echo',
      'gen_ai.tool.call.id': 'e1',
      'keel.tool.is_error': false,
    });
  });
});

/** The trace of the run: the one whose Keel spans carry its workflow id. */
function traceOf(spans: ReadableSpan[], workflowId: string): string | undefined {
  return spans.find((s) => s.attributes['keel.workflow_id'] === workflowId)?.spanContext().traceId;
}
