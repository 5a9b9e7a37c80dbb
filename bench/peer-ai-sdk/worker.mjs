// The peer's worker process (forked by bench/peer.ts with the bench's own Node, IPC channel): one Temporal worker on
// the peer's task queue with AiSdkPlugin, whose model provider is the AI SDK's mock language model (`ai/test`), on the
// activity side as a real provider would be, and the no-op tool as an activity. Replies on IPC: `ready` (pid, Node
// version), `stats` (CPU ms used), `stop`. Its config comes in KEEL_BENCH_PEER: { address, taskQueue }.
import { fileURLToPath } from 'node:url';
import { AiSdkPlugin } from '@temporalio/ai-sdk';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { MockLanguageModelV4 } from 'ai/test';

const config = JSON.parse(process.env.KEEL_BENCH_PEER ?? '{}');
const send = (m) => process.send?.(m);

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/**
 * The scripted replies of Keel's `scripted/bench-noop` (bench/fixtures.ts) for the AI SDK: model `bench-noop-<N>`
 * calls the no-op tool (no arguments) while the prompt holds fewer than N tool results, then answers with text. Like
 * Keel's scripted model, the reply depends only on the transcript, so a retried call gets the same one.
 */
function benchModel(modelId) {
  const turns = Number(/^bench-noop-(\d+)$/.exec(modelId)?.[1] ?? NaN);
  if (!Number.isInteger(turns)) throw new Error(`unknown bench model ${modelId}`);
  return new MockLanguageModelV4({
    provider: 'bench',
    modelId,
    doGenerate: async (options) => {
      const done = options.prompt.filter((m) => m.role === 'tool').length;
      if (done < turns)
        return {
          content: [{ type: 'tool-call', toolCallId: `call_${done + 1}`, toolName: 'noop', input: '{}' }],
          finishReason: { unified: 'tool-calls', raw: undefined },
          usage,
          warnings: [],
        };
      return {
        content: [{ type: 'text', text: 'ok' }],
        finishReason: { unified: 'stop', raw: undefined },
        usage,
        warnings: [],
      };
    },
  });
}

/** A ProviderV4 whose language models are the bench's mock models (one per call: the mock records its calls). */
const modelProvider = {
  specificationVersion: 'v4',
  languageModel: benchModel,
  embeddingModel(id) {
    throw new Error(`no embedding model ${id}`);
  },
  imageModel(id) {
    throw new Error(`no image model ${id}`);
  },
};

Runtime.install({
  logger: new DefaultLogger('ERROR'),
  telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } },
});

let worker;
try {
  const connection = await NativeConnection.connect({ address: config.address });
  worker = await Worker.create({
    connection,
    taskQueue: config.taskQueue,
    identity: `bench-peer-ai-sdk@${config.taskQueue}`,
    workflowsPath: fileURLToPath(new URL('./workflows.mjs', import.meta.url)),
    activities: { noop: async () => 'ok' },
    plugins: [new AiSdkPlugin({ modelProvider })],
  });
} catch (err) {
  send({ type: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) });
  process.exit(1);
}
const running = worker.run();
running.catch((err) => send({ type: 'error', message: String(err) }));

process.on('message', async (m) => {
  if (m.type === 'stats') {
    const cpu = process.cpuUsage();
    send({ type: 'stats', id: m.id, cpuMs: (cpu.user + cpu.system) / 1000 });
  } else if (m.type === 'stop') {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await running.catch(() => {});
    send({ type: 'stopped', id: m.id });
    process.exit(0);
  }
});
process.on('disconnect', () => process.exit(0));
send({ type: 'ready', pid: process.pid, node: process.version });
