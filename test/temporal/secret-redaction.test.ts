/**
 * Secret hygiene end to end (issue 23): a provider key with an embedded newline or NUL under its standard variable
 * (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`) makes undici throw an error that quotes the whole key. The key must reach
 * none of: the run's failure and transcript, the raw history, the worker's log, the OpenTelemetry exception event, the
 * CLI's output. Real dev server, real HTTP mock providers, the real `keel` CLI.
 */
import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { AgentClient } from '../../client/agent-client.js';
import { piAiProvider } from '../../activities/model/pi-ai.js';
import { createAgentWorker, type AgentWorker } from '../../worker/create-worker.js';
import { startMockProvider, type MockProviderServer } from '../mock-providers/server.js';
import { keelCli } from './cli-child.js';
import { historyText } from './harness.js';

const ANTHROPIC_KEY = 'sk-ant-KEEL-SECRET-before-newline\nafter-newline-0123456789';
const OPENAI_KEY = 'sk-KEEL-SECRET-before-nul\u0000after-nul-0123456789';
/** Pieces of both keys: none may appear anywhere, whole or in part. */
const PIECES = [
  'KEEL-SECRET-before-newline',
  'after-newline-0123456789',
  'KEEL-SECRET-before-nul',
  'after-nul-0123456789',
];

// the worker's log, as the Temporal SDK and Keel write it (installed before anything else in this file's process)
const logs: LogEntry[] = [];
Runtime.install({ logger: new DefaultLogger('DEBUG', (entry) => logs.push(entry)) });

const exporter = new InMemorySpanExporter();
let mocks: MockProviderServer[] = [];
let worker: AgentWorker;
let running: Promise<void>;
let client: AgentClient;
const address = inject('temporalAddress');
const taskQueue = `secrets-${randomUUID()}`;

beforeAll(async () => {
  const [anthropic, openai] = await Promise.all([
    startMockProvider('anthropic'),
    startMockProvider('openai-responses'),
  ]);
  mocks = [anthropic, openai];
  worker = await createAgentWorker({
    address,
    taskQueue,
    models: {
      '*': piAiProvider({
        baseUrls: { anthropic: anthropic.url, openai: `${openai.url}/v1` },
        // the standard names, as pi-ai reads them (not KEEL_<P>_API_KEY, not the apiKeys option)
        env: { ANTHROPIC_API_KEY: ANTHROPIC_KEY, OPENAI_API_KEY: OPENAI_KEY },
      }),
    },
    tracing: { spanProcessor: new SimpleSpanProcessor(exporter) },
  });
  running = worker.run();
  running.catch(() => {});
  await worker.ready();
  client = await AgentClient.connect({ address, taskQueue });
});

afterAll(async () => {
  await client?.close();
  await worker?.shutdown();
  await Promise.all(mocks.map((m) => m.close()));
});

function expectNoPiece(where: string, text: string): void {
  for (const piece of PIECES) expect(text, `${where} holds part of a key`).not.toContain(piece);
}

describe.each([
  { variable: 'ANTHROPIC_API_KEY (a newline)', model: 'anthropic/claude-sonnet-4-5', header: '[REDACTED]' },
  { variable: 'OPENAI_API_KEY (a NUL)', model: 'openai/gpt-5', header: 'Bearer [REDACTED]' },
])('a malformed key under $variable', ({ model, header }) => {
  it('is redacted from the failure, transcript, history, worker log, span exception event and CLI output', async () => {
    const message = `Headers.append: "${header}" is an invalid header value.`;
    const h = await client.start({ model, prompt: 'hi' });
    const r = await h.result();
    expect(r.status).toBe('failed');
    expect(r.error).toBe(message);
    expect(mocks.every((m) => m.requests.length === 0)).toBe(true); // undici refused before sending anything

    const history = historyText(await h.workflow.fetchHistory());
    expect(history).toContain(message); // control: the failure is there, redacted
    expectNoPiece('history', history);
    expectNoPiece('result', JSON.stringify(r));
    expectNoPiece('transcript', JSON.stringify(await h.allMessages()));

    const log = logs.map((e) => `${e.level} ${e.message} ${inspect(e.meta, { depth: 6 })}`).join('\n');
    expect(log).toContain('[REDACTED]'); // control: the worker logged the failed activity
    expectNoPiece('worker log', log);

    const spans = exporter.getFinishedSpans().filter((s) => s.name === `chat ${model}`);
    const events = JSON.stringify(spans.flatMap((s) => s.events));
    expect(events).toContain('"exception"'); // control: the failed model call recorded its exception
    expect(events).toContain('[REDACTED]');
    expectNoPiece('span exception event', events);
    expectNoPiece('span status', JSON.stringify(spans.map((s) => [s.status, s.attributes])));

    const conn = ['--address', address, '--task-queue', taskQueue];
    const run = await keelCli([...conn, 'run', '--model', model, 'hi']);
    expect(run.stdout + run.stderr).toContain(message); // control: the CLI printed the failure
    expectNoPiece('keel run', run.stdout + run.stderr);
    for (const args of [
      ['status', h.workflowId],
      ['transcript', h.workflowId],
      ['status', h.workflowId, '--json'],
    ]) {
      const out = await keelCli([...conn, ...args]);
      expect(out.stdout + out.stderr).toContain('[REDACTED]');
      expectNoPiece(`keel ${args.join(' ')}`, out.stdout + out.stderr);
    }
  });
});
