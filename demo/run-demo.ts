/**
 * The seed demo: a Temporal dev server (SQLite file, Web UI), a Keel worker in-process, and one `session` run that
 * plays the demo prompts, later ones as `followUp` signals; everything is printed live from the run's `events` query.
 * `npm run demo` and `keel demo` both call `runDemo`.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { piAiProvider } from '../activities/model/pi-ai.js';
import { scriptedModel } from '../activities/model/scripted.js';
import { AgentClient, type AgentRunHandle } from '../client/agent-client.js';
import { startDevServer } from '../dev/dev-server.js';
import { ResourceInUseError } from '../client/resource-holder.js';
import type { LoggedEvent } from '../common/events.js';
import { messageText } from '../common/messages.js';
import { createAgentWorker } from '../worker/create-worker.js';
import { prepareWorkflowCode } from '../worker/workflow-code.js';
import { DEMO_INPUTS, DEMO_SCRIPT } from './script.js';
import { calcTool, readFileTool } from './tools.js';

export interface DemoOptions {
  /** Keep the dev server (and its UI) up after the session until Ctrl-C. */
  keep: boolean;
  /** `scripted/demo` (the offline replay) or any pi-ai `provider/model-id`. */
  model: string;
  /**
   * SQLite file of the dev server (`.keel/demo.db` from `npm run demo` and `keel demo`: not `keel dev`'s `.keel/dev.db`,
   * which a running `keel dev` holds).
   */
  dbFilename: string;
}

/** The demo's own SQLite file, next to `keel dev`'s `.keel/dev.db`. */
export const DEMO_DB = '.keel/demo.db';

/** A task queue of the demo's own, so a `keel dev` worker with other tools can never pick up its tasks. */
const DEMO_TASK_QUEUE = 'keel-demo';

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

/** Runs the demo; true when every turn succeeded, false when a model call failed (the error is printed). */
export async function runDemo({ keep, model, dbFilename }: DemoOptions): Promise<boolean> {
  console.log(`Keel demo · Node ${process.version} · model ${model}`);
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  mkdirSync(dirname(dbFilename), { recursive: true });
  // the workflow bundle is read (or, in a fresh checkout, built) while the dev server starts; the worker takes it then
  const bundled = prepareWorkflowCode();
  const uiPort = await freePort(8233);
  const server = await startDevServer({
    dbFilename,
    ui: true,
    uiPort,
    logLevel: 'never',
    log: (s) => console.log(s),
  }).catch((err: unknown) => {
    if (err instanceof ResourceInUseError)
      throw new Error(`${err.message}: stop it, or give the demo another file with --db.`, { cause: err });
    throw err;
  });
  const workspace = mkdtempSync(join(tmpdir(), 'keel-demo-'));
  writeFileSync(join(workspace, 'notes.txt'), 'Keel demo workspace.\n');
  await bundled;
  const worker = await createAgentWorker({
    address: server.address,
    taskQueue: DEMO_TASK_QUEUE,
    tools: [calcTool, readFileTool(workspace)],
    models: { scripted: scriptedModel({ demo: DEMO_SCRIPT }), '*': piAiProvider() },
  });
  const running = worker.run();
  await worker.ready();
  const client = await AgentClient.connect({ address: server.address, taskQueue: DEMO_TASK_QUEUE });
  try {
    const [first, ...rest] = DEMO_INPUTS;
    console.log(`\nyou> ${first}`);
    const run = await client.start({
      model,
      systemPrompt:
        'You are a helpful assistant. Use the calc tool for arithmetic and read_file to read files in the workspace.',
      prompt: first,
      tools: ['calc', 'read_file'],
      mode: 'session',
      metadata: { demo: 'seed-003' },
    });
    const url = `${server.uiUrl}/namespaces/default/workflows/${run.workflowId}`;
    console.log(`(watch it live: ${url})`);
    let failed = 0;
    let seq = 0;
    for (const [i, text] of [first, ...rest].entries()) {
      if (i > 0) {
        console.log(`\nyou> ${text}`);
        await run.followUp(text);
      }
      const r = await follow(run, seq);
      seq = r.seq;
      failed += r.failedTurns;
      if (r.failedTurns > 0) break; // the same model would fail the next prompt too
    }
    await run.end();
    const result = await run.result().catch((err: unknown) => ({ status: 'failed', turns: '?', error: String(err) }));
    if (failed > 0) {
      console.error(`\nDemo failed: ${failed} turn(s) ended with a model error (above). Session ${result.status}.`);
    } else {
      console.log(`\nSession ${result.status}: ${(await run.allMessages()).length} messages, ${result.turns} turns.`);
    }
    if (keep) {
      console.log(`Temporal UI: ${url}\nServer kept running (--keep); Ctrl-C to stop.`);
      const keepAlive = setInterval(() => {}, 2 ** 30);
      await new Promise((r) => process.once('SIGINT', r));
      clearInterval(keepAlive);
    } else {
      console.log('Stopping the dev server (run the demo with --keep to browse this run in the Temporal UI).');
    }
    return failed === 0;
  } finally {
    await client.close();
    await worker.shutdown();
    await running.catch(() => undefined);
    await server.shutdown();
  }
}

/** Prints the run's events after `seq` until the agent run ends; returns the last sequence number and failed turns. */
async function follow(run: AgentRunHandle, seq: number): Promise<{ seq: number; failedTurns: number }> {
  let turn = 0;
  let failedTurns = 0;
  for (;;) {
    const page = await run.events({ after: seq });
    for (const e of page.events) {
      seq = e.seq;
      if (e.type === 'message_end' && e.message.role === 'assistant' && e.message.stopReason === 'error') failedTurns++;
      print(e, () => ++turn);
      if (e.type === 'agent_end') return { seq, failedTurns };
    }
    if (page.events.length === 0) await new Promise((r) => setTimeout(r, 50));
  }
}

function print(e: LoggedEvent, nextTurn: () => number): void {
  if (e.type === 'turn_start') console.log(`[turn ${nextTurn()}]`);
  else if (e.type === 'message_end' && e.message.role === 'assistant') {
    const text = messageText(e.message);
    if (text) console.log(`assistant> ${text}`);
    if (e.message.stopReason === 'error')
      console.log(`[model error] ${e.message.errorMessage ?? 'the model call failed'}`);
  } else if (e.type === 'tool_execution_start') console.log(`[tool call] ${e.toolName} ${JSON.stringify(e.args)}`);
  else if (e.type === 'tool_execution_end') {
    const text = e.result.content
      .map((b) => (b.type === 'text' ? b.text : '[image]'))
      .join('')
      .replace(/\n/g, ' ');
    console.log(
      `[tool result] ${e.toolName} → ${text.length > 160 ? `${text.slice(0, 160)}…` : text}${e.isError ? ' (error)' : ''}`,
    );
  }
}
