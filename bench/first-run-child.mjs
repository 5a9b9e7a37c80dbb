// One fresh process's first run, for bench/first-run.ts: imports the worker and client entries named by
// KEEL_FIRSTRUN_WORKER / KEEL_FIRSTRUN_CLIENT (the compiled dist/ of a package, or the sources under tsx),
// createAgentWorker, run + ready, a client, one 2-turn scripted run (a tool call, then the answer), and prints each
// phase's milliseconds as one JSON line. Plain JavaScript, so the package case runs on plain Node as a consumer's does.
const at = { start: performance.now() }; // ms since this process started: Node's own boot (and tsx's loader)
const phase = (name) => (at[name] = performance.now());
const { createAgentWorker, defineTool, scriptedModel } = await import(process.env.KEEL_FIRSTRUN_WORKER);
phase('importWorker');
const { AgentClient } = await import(process.env.KEEL_FIRSTRUN_CLIENT);
phase('importClient');
const address = process.env.TEMPORAL_ADDRESS;
const taskQueue = process.env.KEEL_TASK_QUEUE;
const echo = defineTool({
  name: 'echo',
  description: 'Echoes text.',
  parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  execute: async (_id, args) => ({ content: [{ type: 'text', text: `echo: ${args.text}` }] }),
});
const rules = [
  { match: 'toolResult:echo', text: 'The tool answered.' },
  { text: 'Calling echo.', toolCalls: [{ id: 'c1', name: 'echo', arguments: { text: 'ping' } }] },
];
const worker = await createAgentWorker({
  address,
  taskQueue,
  versioning: { deploymentName: taskQueue },
  tools: [echo],
  models: { scripted: scriptedModel({ first: { rules } }) },
});
phase('createWorker');
const running = worker.run();
await worker.ready();
phase('ready');
const client = await AgentClient.connect({ address, taskQueue });
phase('connectClient');
const run = await client.start({ model: 'scripted/first', prompt: 'use echo', tools: ['echo'] });
const result = await run.result();
phase('run');
if (result.status !== 'completed' || result.turns !== 2) throw new Error(`unexpected result ${JSON.stringify(result)}`);
const { user, system } = process.cpuUsage();
await client.close();
await worker.shutdown();
await running;
process.stdout.write(`${JSON.stringify({ ...at, cpuMs: (user + system) / 1000 })}\n`);
