/**
 * The README's "Sub-agents" program: a lead agent that delegates two topics to a `researcher` sub-agent and a count to
 * a typed `counter` sub-agent, all three calls in one parallel batch, each a child run. Offline: the models are
 * scripted here. Needs a Temporal server on localhost:7233 (`npx keel dev` in another terminal), then:
 * `npx tsx examples/sub-agents.ts`. Outside this repository import from 'keel' instead.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { AgentClient, createAgentWorker, defineAgent, scriptedModel, Type } from '../index.js';

Runtime.install({ logger: new DefaultLogger('WARN') }); // the SDK logs every worker state change at INFO

const researcher = defineAgent({
  name: 'researcher',
  description: 'Researches one topic and answers in one sentence.',
  systemPrompt: 'You are a careful researcher. Answer in one sentence.',
  tools: [], // the child's own tools: any tool, MCP tool or sub-agent of the worker
  model: 'scripted/researcher', // default: the calling run's model
  maxTurns: 5,
});

const counter = defineAgent({
  name: 'counter',
  description: 'Counts the items of a list.',
  systemPrompt: 'Reply with JSON only: {"count": <integer>}.',
  tools: [],
  model: 'scripted/researcher',
  input: Type.Object({ items: Type.Array(Type.String()) }), // the child's prompt is these arguments as JSON
  output: Type.Object({ count: Type.Integer() }), // the child's final text must be JSON of this shape
});

const models = {
  scripted: scriptedModel({
    lead: {
      rules: [
        { match: 'toolResult:', text: 'Summary: durable loops, durable tools, and 3 runtimes compared.' },
        {
          text: 'Delegating.',
          toolCalls: [
            { id: 'call_1', name: 'researcher', arguments: { task: 'What makes a Temporal workflow durable?' } },
            { id: 'call_2', name: 'researcher', arguments: { task: 'What is an activity for?' } },
            { id: 'call_3', name: 'counter', arguments: { items: ['Keel', 'Mastra', 'LangGraph'] } },
          ],
        },
      ],
    },
    researcher: {
      rules: [
        { match: 'durable', text: 'Its history is recorded, so it resumes where it stopped.' },
        { match: 'activity', text: 'Activities do the I/O, retried by Temporal.' },
        { match: 'items', text: '{"count": 3}' },
      ],
    },
  }),
};

const taskQueue = 'keel-example-sub-agents';
const worker = await createAgentWorker({ taskQueue, agents: [researcher, counter], models });
const running = worker.run();

const client = await AgentClient.connect({ taskQueue });
const run = await client.start({
  model: 'scripted/lead',
  prompt: 'Compare durable agent runtimes.',
  tools: ['researcher', 'counter'], // sub-agents are named like tools
});
const result = await run.result();
console.log(`${result.status}: ${result.finalText}`);
for (const call of ['call_1', 'call_2', 'call_3']) {
  // each call ran as the child run <workflowId>-<toolCallId> (keel transcript <workflowId> --child <toolCallId>)
  const child = await client.getHandle(`${run.workflowId}-${call}`).result();
  console.log(`  ${call}: ${child.finalText}`);
}

await client.close();
await worker.shutdown();
await running;
