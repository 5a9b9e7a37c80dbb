/**
 * A small real HTTP server on 127.0.0.1 (random port) that plays a queue of scripted responses in one model wire
 * protocol, and records every request.
 *
 *   const mock = await startMockProvider('anthropic');
 *   mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'Hello' }] } });
 *   mock.enqueue({ status: 429, headers: { 'retry-after': '1' }, message: 'Slow down' });
 *   …  baseUrl: mock.url (Anthropic) or `${mock.url}/v1` (OpenAI)
 *   mock.requests[0].body, mock.requests[0].headers['x-api-key'], await mock.requests[0].closed
 *   await mock.close();
 *
 * Every request takes the next queued step, whatever its path. With an empty queue the server answers 500
 * `mock queue is empty`, so a test that sends one request too many fails loudly.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { anthropicProtocol } from './anthropic.js';
import { openaiChatProtocol } from './openai-chat.js';
import { openaiResponsesProtocol } from './openai-responses.js';
import { MockPromptCache, requestCacheFields, type RequestCacheFields } from './prompt-cache.js';
import { isFailure, type MockProtocol, type MockReply, type MockStep, type MockStreamStep } from './script.js';
import { inputTokensOf, MockLimits, type MockLimitsOptions } from './limits.js';

export type { MockBlock, MockFailure, MockReply, MockStep, MockStreamStep } from './script.js';

export interface RecordedRequest {
  method: string;
  /** Path and query, e.g. `/v1/messages`. */
  path: string;
  /** Node's lower-cased request headers. */
  headers: IncomingHttpHeaders;
  /** The parsed JSON body (or the raw text when it is not JSON). */
  body: any;
  /** Set once the exchange is over: true when the client closed the connection before the response was complete. */
  clientClosedEarly: boolean;
  /** True when the server dropped the connection on purpose (`dropAfterFrames`). */
  droppedByServer: boolean;
  /** How many SSE frames were written before the exchange ended. */
  framesSent: number;
  /** Resolves when the exchange is over (response finished or connection closed). */
  closed: Promise<void>;
  /** What the request asked of the prompt cache (markers, `prompt_cache_key`, session headers). */
  cache: RequestCacheFields;
}

export interface MockProviderOptions {
  /**
   * Anthropic only: keep a prompt cache as the API does (test/mock-providers/prompt-cache.ts) and report its reads and
   * writes in each reply's usage, unless the reply's script sets `usage`. `minTokens`: the smallest cached prefix
   * (default 1,024).
   */
  promptCache?: boolean | { minTokens?: number };
  /** Answers every request (its body given) instead of the queue. */
  respond?: (body: any) => MockStep;
  /** Enforces requests and input tokens per minute as a provider does (limits.ts: 429 with `retry-after` over a limit). */
  limits?: MockLimitsOptions;
}

export interface MockProviderServer {
  readonly protocol: MockProtocol['name'];
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string;
  readonly requests: RecordedRequest[];
  /** Appends steps to the response queue. */
  enqueue(...steps: MockStep[]): void;
  /** Steps not consumed yet. */
  pending(): number;
  /** The limits it enforces (`limits` option): its 429 count and accepted requests. */
  readonly limits?: MockLimits;
  close(): Promise<void>;
}

export type MockProtocolName = 'anthropic' | 'openai-chat' | 'openai-responses';

const PROTOCOLS: Record<MockProtocolName, MockProtocol> = {
  anthropic: anthropicProtocol,
  'openai-chat': openaiChatProtocol,
  'openai-responses': openaiResponsesProtocol,
};

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export async function startMockProvider(
  protocolName: MockProtocolName,
  opts: MockProviderOptions = {},
): Promise<MockProviderServer> {
  const protocol = PROTOCOLS[protocolName];
  const { promptCache } = opts;
  const cache = promptCache ? new MockPromptCache(promptCache === true ? undefined : promptCache.minTokens) : undefined;
  const limits = opts.limits ? new MockLimits(opts.limits) : undefined;
  const queue: MockStep[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();

  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = [];
    req.on('data', (part: Buffer) => parts.push(part));
    req.on('end', () => {
      const text = Buffer.concat(parts).toString('utf8');
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // keep the raw text
      }
      let markClosed!: () => void;
      const record: RecordedRequest = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body,
        clientClosedEarly: false,
        droppedByServer: false,
        framesSent: 0,
        closed: new Promise<void>((resolve) => (markClosed = resolve)),
        cache: requestCacheFields(body, req.headers),
      };
      requests.push(record);
      res.on('close', () => {
        if (!res.writableFinished && !record.droppedByServer) record.clientClosedEarly = true;
        markClosed();
      });
      const retryAfter = limits?.admit(inputTokensOf(body));
      const step: MockStep | undefined =
        retryAfter !== undefined
          ? { status: 429, headers: { 'retry-after': String(retryAfter) }, message: 'rate limit exceeded (mock)' }
          : opts.respond
            ? opts.respond(body)
            : queue.shift();
      if (!step) {
        sendJson(res, 500, protocol.errorBody(500, 'mock queue is empty'));
      } else if (isFailure(step)) {
        sendJson(
          res,
          step.status,
          step.body ?? protocol.errorBody(step.status, step.message ?? `mock error ${step.status}`),
          step.headers,
        );
      } else {
        const model =
          typeof (body as { model?: unknown })?.model === 'string' ? (body as { model: string }).model : 'mock-model';
        void stream(res, record, step, protocol.frames(withCacheUsage(step.reply, body, cache), model));
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    protocol: protocol.name,
    url: `http://127.0.0.1:${port}`,
    requests,
    enqueue: (...steps) => void queue.push(...steps),
    pending: () => queue.length,
    ...(limits ? { limits } : {}),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** The reply with the simulated cache's usage, when the mock keeps one and the script did not set its usage. */
function withCacheUsage(reply: MockReply, body: unknown, cache: MockPromptCache | undefined): MockReply {
  if (!cache || reply.usage) return reply;
  return { ...reply, usage: { ...cache.usage(body), output: 5 } };
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(JSON.stringify(body));
}

async function stream(
  res: ServerResponse,
  record: RecordedRequest,
  step: MockStreamStep,
  frames: Iterable<string>,
): Promise<void> {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    ...step.headers,
  });
  res.flushHeaders();
  for (const frame of frames) {
    if (step.dropAfterFrames !== undefined && record.framesSent >= step.dropAfterFrames) {
      record.droppedByServer = true;
      res.socket?.destroy();
      return;
    }
    if (step.delayMs) await sleep(step.delayMs);
    // a write's callback comes as a microtask while the socket takes data: give the event loop a turn now and then, so
    // a long reply does not hold up the test process (which often hosts the worker too)
    else if (record.framesSent % 64 === 63) await new Promise((resolve) => setImmediate(resolve));
    if (res.destroyed || res.writableEnded) return;
    // Wait until the frame is handed to the socket, so a following drop cannot swallow it.
    await new Promise<void>((resolve) => res.write(frame, () => resolve()));
    record.framesSent++;
  }
  res.end();
}
