/**
 * The README's "Using it" program: a worker with the calc tool on a task queue of its own (so it never shares a queue
 * with a worker that has other tools), and one run through AgentClient. Needs a Temporal server on localhost:7233
 * (`npx keel dev` in another terminal), then: `npx tsx examples/calc.ts [provider/model-id]`.
 * The default model is the scripted one in examples/rules.json (offline); pass e.g. anthropic/claude-sonnet-4-5 with
 * its API key in the environment to ask a real model.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { AgentClient, createAgentWorker, scriptedModel, piAiProvider } from '../index.js';
import { calc } from './tools.js';

Runtime.install({ logger: new DefaultLogger('WARN') }); // the SDK logs every worker state change at INFO

const taskQueue = 'keel-example-calc';
const model = process.argv[2] ?? 'scripted/examples/rules.json';

const worker = await createAgentWorker({
  taskQueue,
  tools: [calc],
  models: { scripted: scriptedModel(), '*': piAiProvider() },
});
const running = worker.run();

const client = await AgentClient.connect({ taskQueue });
const run = await client.start({ model, prompt: 'What is 12*8?', tools: ['calc'] });
const result = await run.result(); // { status, finalText, newMessages, usage, turns }
console.log(`${result.status} after ${result.turns} turns: ${result.finalText}`);

await client.close();
await worker.shutdown();
await running;
