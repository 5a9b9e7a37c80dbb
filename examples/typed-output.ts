/**
 * Typed results (docs/runs.md "Typed results"): a run given an `output` schema returns its final answer parsed and
 * validated, typed from the TypeBox schema. The scripted model in examples/typed-rules.json first answers in prose;
 * the run sends it the validation error and it answers again in JSON. Needs a Temporal server on localhost:7233
 * (`npx keel dev` in another terminal), then: `npx tsx examples/typed-output.ts [provider/model-id]`. Outside this
 * repository import from 'keel' instead.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { Type } from 'typebox';
import { AgentClient, createAgentWorker, scriptedModel, piAiProvider } from '../index.js';

Runtime.install({ logger: new DefaultLogger('WARN') }); // the SDK logs every worker state change at INFO

const taskQueue = 'keel-example-typed';
const model = process.argv[2] ?? 'scripted/examples/typed-rules.json';

const Triage = Type.Object({
  severity: Type.Union([Type.Literal('low'), Type.Literal('medium'), Type.Literal('high')]),
  summary: Type.String(),
});

const worker = await createAgentWorker({ taskQueue, models: { scripted: scriptedModel(), '*': piAiProvider() } });
const running = worker.run();

const client = await AgentClient.connect({ taskQueue });
const run = await client.start({
  model,
  systemPrompt: 'Answer with JSON only: {"severity": "low" | "medium" | "high", "summary": string}.',
  prompt: 'Triage ticket 42: checkout fails for EU customers.',
  output: Triage, // the final answer must be JSON valid against it
  outputRepairs: 2, // invalid answers sent back to the model before the run fails with InvalidAgentOutput
});
const result = await run.result(); // result.output: { severity: 'low' | 'medium' | 'high'; summary: string } | undefined
const repairs = result.newMessages.filter((m) => m.role === 'user').length - 1;
console.log(`${result.status} after ${repairs} repair(s): ${result.output?.severity} — ${result.output?.summary}`);

await client.close();
await worker.shutdown();
await running;
