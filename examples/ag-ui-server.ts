/**
 * A run in a web page through AG-UI: a small HTTP server (Node's `http`) that mounts Keel's AG-UI endpoint
 * (`agUiHandler` from keel/client) at `POST /agui`, and serves examples/ag-ui-page.html, which talks to it with
 * `@ag-ui/client`'s HttpAgent (bundled for the browser with esbuild when the server starts, served at
 * `/ag-ui-client.js`: no CDN needed). The page streams a run live, answers approvals (AG-UI interrupts) and resumes
 * after a reload from the last offset it applied. Needs a Temporal server on localhost:7233 (`npx keel dev`), then
 * `npx tsx examples/ag-ui-server.ts [port]` and open http://localhost:<port>/ (it starts a worker with the scripted
 * model of examples/rules.json and the calc tool, whose calls wait for approval; pass
 * KEEL_MODEL=anthropic/claude-sonnet-4-5 to ask a real model; KEEL_AG_UI_PAGE=<file.html> serves that page instead).
 * No authentication: put yours in front of it.
 */
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { fileURLToPath } from 'node:url';
import { agUiHandler, type AgUiOptions } from '../client/ag-ui/http.js';

const PAGE = fileURLToPath(new URL('./ag-ui-page.html', import.meta.url));

/** `@ag-ui/client` as one browser ES module (esbuild, which tsx and vite bring; built once per server). */
async function clientBundle(): Promise<string> {
  const { build } = await import('esbuild');
  const out = await build({
    stdin: { contents: "export * from '@ag-ui/client';", resolveDir: fileURLToPath(new URL('.', import.meta.url)) },
    bundle: true,
    format: 'esm',
    platform: 'browser',
    minify: true,
    write: false,
    logLevel: 'silent',
  });
  return out.outputFiles[0].text;
}

/**
 * The server (not listening yet): the page (`page`: another HTML file to serve at `/`, e.g. the minimal page of
 * docs/live-output.md), the client bundle and the AG-UI endpoint.
 */
export async function createAgUiServer(opts: AgUiOptions & { page?: string }): Promise<Server> {
  const page = opts.page ?? PAGE;
  const bundle = await clientBundle();
  const endpoint = agUiHandler(opts);
  return createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://localhost').pathname;
    if (path === '/agui') return void endpoint(req, res);
    if (req.method === 'GET' && path === '/')
      return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(readFileSync(page));
    if (req.method === 'GET' && path === '/ag-ui-client.js')
      return void res.writeHead(200, { 'content-type': 'text/javascript; charset=utf-8' }).end(bundle);
    res.writeHead(404, { 'content-type': 'text/plain' }).end(`no route ${req.method} ${path}\n`);
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { DefaultLogger, Runtime } = await import('@temporalio/worker');
  const { createAgentWorker, scriptedModel, piAiProvider } = await import('../index.js');
  const { AgentClient } = await import('../client/agent-client.js');
  const { calc } = await import('./tools.js');
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const taskQueue = 'keel-example-ag-ui';
  const worker = await createAgentWorker({
    taskQueue,
    tools: [calc],
    models: { scripted: scriptedModel(), '*': piAiProvider() },
    hooks: { needsApproval: (ctx) => ctx.toolCall.name === 'calc' },
    approvals: { authentication: 'none' },
  });
  void worker.run();
  const client = await AgentClient.connect({ taskQueue });
  const model = process.env.KEEL_MODEL ?? 'scripted/examples/rules.json';
  const page = process.env.KEEL_AG_UI_PAGE;
  const server = await createAgUiServer({ client, runInput: { model, tools: ['calc'] }, ...(page ? { page } : {}) });
  const port = Number(process.argv[2] ?? 8080);
  server.listen(port, () => console.log(`open http://localhost:${port}/`));
}
