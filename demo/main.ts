/**
 * `npm run demo`: a Temporal dev server (SQLite under .keel/, Web UI), a Keel worker in-process, and one `session` run
 * that replays the seed demo with a scripted model. Later prompts arrive as `followUp` signals; everything is printed
 * live from the run's `events` query. `npm run demo -- --keep` keeps the server up afterwards to browse the UI;
 * `npm run demo -- --model anthropic/claude-sonnet-4-5` plays the same prompts to a real model (key from the environment).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { piAiProvider } from '../activities/model/pi-ai.js';
import { scriptedModel } from '../activities/model/scripted.js';
import { AgentClient, type AgentRunHandle } from '../client/agent-client.js';
import { startDevServer } from '../client/dev-server.js';
import type { LoggedEvent } from '../common/events.js';
import { messageText } from '../common/messages.js';
import { createAgentWorker } from '../worker/create-worker.js';
import { DEMO_INPUTS, DEMO_SCRIPT } from './script.js';
import { calcTool, readFileTool } from './tools.js';

const keep = process.argv.includes('--keep');
const modelFlag = process.argv.indexOf('--model');
/** The scripted replay by default; any pi-ai `provider/model-id` with `--model`. */
const model = modelFlag > 0 ? process.argv[modelFlag + 1] : 'scripted/demo';
const dbFlag = process.argv.indexOf('--db');
const dbFilename = dbFlag > 0 ? process.argv[dbFlag + 1] : '.keel/dev.db';

async function freePort(preferred: number): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.once('error', () => resolve(freePort(0)));
    srv.listen(preferred, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

async function main() {
  console.log(`Keel demo · Node ${process.version}`);
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  mkdirSync(dirname(dbFilename), { recursive: true });
  const uiPort = await freePort(8233);
  const server = await startDevServer({ dbFilename, ui: true, uiPort, log: (s) => console.log(s) });
  const workspace = mkdtempSync(join(tmpdir(), 'keel-demo-'));
  writeFileSync(join(workspace, 'notes.txt'), 'Keel demo workspace.\n');
  const worker = await createAgentWorker({
    address: server.address,
    tools: [calcTool, readFileTool(workspace)],
    models: { scripted: scriptedModel({ demo: DEMO_SCRIPT }), '*': piAiProvider() },
  });
  const running = worker.run();
  const client = await AgentClient.connect({ address: server.address });
  try {
    const [first, ...rest] = DEMO_INPUTS;
    console.log(`\nyou> ${first}`);
    const run = await client.start({
      model,
      systemPrompt: 'You are a helpful assistant. Use the calc tool for arithmetic and read_file to read files in the workspace.',
      prompt: first,
      tools: ['calc', 'read_file'],
      mode: 'session',
      metadata: { demo: 'seed-003' },
    });
    console.log(`(watch it live: ${server.uiUrl}/namespaces/default/workflows/${run.workflowId})`);
    const url = `${server.uiUrl}/namespaces/default/workflows/${run.workflowId}`;
    let seq = await follow(run, 0);
    for (const text of rest) {
      console.log(`\nyou> ${text}`);
      await run.followUp(text);
      seq = await follow(run, seq);
    }
    await run.end();
    const result = await run.result();
    console.log(`\nSession ${result.status}: ${(await run.allMessages()).length} messages, ${result.turns} turns.`);
    console.log(`Temporal UI: ${url}`);
    if (keep) {
      console.log('Server kept running (--keep); Ctrl-C to stop.');
      await new Promise((r) => process.once('SIGINT', r));
    }
  } finally {
    await client.close();
    await worker.shutdown();
    await running.catch(() => undefined);
    await server.shutdown();
  }
}

/** Prints the run's events after `seq` until the agent run ends; returns the last sequence number. */
async function follow(run: AgentRunHandle, seq: number): Promise<number> {
  let turn = 0;
  for (;;) {
    const page = await run.events({ after: seq });
    for (const e of page.events) {
      seq = e.seq;
      print(e, () => ++turn);
      if (e.type === 'agent_end') return seq;
    }
    if (page.events.length === 0) await new Promise((r) => setTimeout(r, 50));
  }
}

function print(e: LoggedEvent, nextTurn: () => number): void {
  if (e.type === 'turn_start') console.log(`[turn ${nextTurn()}]`);
  else if (e.type === 'message_end' && e.message.role === 'assistant') {
    const text = messageText(e.message);
    if (text) console.log(`assistant> ${text}`);
  } else if (e.type === 'tool_execution_start') console.log(`[tool call] ${e.toolName} ${JSON.stringify(e.args)}`);
  else if (e.type === 'tool_execution_end') {
    const text = e.result.content.map((b) => (b.type === 'text' ? b.text : '[image]')).join('').replace(/\n/g, ' ');
    console.log(`[tool result] ${e.toolName} → ${text.length > 160 ? `${text.slice(0, 160)}…` : text}${e.isError ? ' (error)' : ''}`);
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
