/**
 * A run in a web page: a small HTTP server (Node's `http`) that turns `AgentRunHandle.stream()` into Server-Sent
 * Events, with `Last-Event-ID` resume, and serves examples/sse-page.html, which renders a run live and sends
 * follow-ups and approvals through it. Needs a Temporal server on localhost:7233 (`npx keel dev`), then
 * `npx tsx examples/sse-server.ts [port]` and open http://localhost:<port>/ (it starts a worker with the scripted
 * model of examples/rules.json and the calc tool; pass KEEL_MODEL=anthropic/claude-sonnet-4-5 to ask a real model).
 *
 * Routes: `POST /runs` `{ prompt }` → `{ workflowId }`; `GET /runs/<id>/events` the SSE stream (`id:` = the event's
 * offset; a reconnect's `Last-Event-ID`, or `?from=<offset>` after a page reload, resumes after it);
 * `GET /runs/<id>/approvals` the pending approvals; `POST /runs/<id>/follow-up` `{ text }`;
 * `POST /runs/<id>/approve` and `/deny` `{ toolCallId, argsDigest, approver, reason? }`.
 * No authentication: put it behind yours before it faces anyone.
 */
import { readFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { AgentClient, UpdateRejectedError } from '../client/agent-client.js';

const PAGE = fileURLToPath(new URL('./sse-page.html', import.meta.url));

export interface SseServerOptions {
  /** Run input besides the prompt (default: the scripted model of examples/rules.json, the calc tool). */
  model?: string;
  tools?: string[];
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>) : {};
}

function json(res: ServerResponse, status: number, value: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(value));
}

/** Streams run `id` from `from` as SSE until the run ends or the browser goes away. */
async function sse(client: AgentClient, id: string, from: number, req: IncomingMessage, res: ServerResponse) {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
  res.write('retry: 1000\n\n');
  const gone = new AbortController();
  req.on('close', () => gone.abort());
  for await (const e of client.getHandle(id).stream({ from, signal: gone.signal })) {
    res.write(`id: ${e.offset}\ndata: ${JSON.stringify(e)}\n\n`);
  }
  if (!gone.signal.aborted) res.end('event: end\ndata: {}\n\n');
}

/** The server (not listening yet). */
export function createSseServer(client: AgentClient, opts: SseServerOptions = {}): Server {
  return createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const [, runs, id, action] = url.pathname.split('/');
    (async () => {
      if (req.method === 'GET' && url.pathname === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(readFileSync(PAGE));
      } else if (req.method === 'POST' && url.pathname === '/runs') {
        const { prompt } = await body(req);
        const run = await client.start({
          model: opts.model ?? 'scripted/examples/rules.json',
          prompt: String(prompt ?? ''),
          tools: opts.tools ?? ['calc'],
          mode: 'session',
        });
        json(res, 200, { workflowId: run.workflowId });
      } else if (runs === 'runs' && id && req.method === 'GET' && action === 'events') {
        const from = Number(req.headers['last-event-id'] ?? url.searchParams.get('from') ?? 0) || 0;
        await sse(client, id, from, req, res);
      } else if (runs === 'runs' && id && req.method === 'GET' && action === 'approvals') {
        json(res, 200, (await client.getHandle(id).state()).pendingApprovals);
      } else if (runs === 'runs' && id && req.method === 'POST' && action === 'follow-up') {
        const { text } = await body(req);
        json(res, 200, await client.getHandle(id).followUp({ role: 'user', content: String(text ?? '') }));
      } else if (runs === 'runs' && id && req.method === 'POST' && (action === 'approve' || action === 'deny')) {
        const d = (await body(req)) as { toolCallId: string; argsDigest: string; approver: string; reason?: string };
        const h = client.getHandle(id);
        json(res, 200, await (action === 'approve' ? h.approve(d) : h.deny(d)));
      } else json(res, 404, { error: `no route ${req.method} ${url.pathname}` });
    })().catch((err: unknown) => {
      if (res.headersSent) return void res.end();
      json(res, err instanceof UpdateRejectedError ? 409 : 500, { error: (err as Error).message });
    });
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  const { createAgentWorker, scriptedModel, piAiProvider } = await import('../index.js');
  const { calc } = await import('./tools.js');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const taskQueue = 'keel-example-sse';
  const worker = await createAgentWorker({
    taskQueue,
    tools: [calc],
    models: { scripted: scriptedModel(), '*': piAiProvider() },
  });
  void worker.run();
  const client = await AgentClient.connect({ taskQueue });
  const port = Number(process.argv[2] ?? 8080);
  createSseServer(client, { model: process.env.KEEL_MODEL }).listen(port, () =>
    console.log(`open http://localhost:${port}/`),
  );
}
