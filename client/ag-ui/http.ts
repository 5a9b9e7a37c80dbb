/**
 * The AG-UI endpoint over HTTP: `POST` a `RunAgentInput`, get the run's AG-UI events as Server-Sent Events (encoded
 * by `@ag-ui/encoder`). `agUiHandler` mounts on any Node HTTP server (`http.createServer`, Express, Fastify's raw
 * handler); `agUiFetchHandler` serves fetch-style runtimes (`(Request) => Response`). No authentication: put yours in
 * front, as for any route that can start and approve runs.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { EventEncoder } from '@ag-ui/encoder';
import { EventType, type BaseEvent } from '@ag-ui/core';
import { agUiRun, type AgUiOptions } from './run.js';

/** Largest request body read (a `RunAgentInput` carries the thread's messages). */
const MAX_BODY_BYTES = 4 * 1024 * 1024;

const invalid = (message: string): BaseEvent =>
  ({ type: EventType.RUN_ERROR, message: `Invalid RunAgentInput: ${message}`, code: 'INVALID_INPUT' }) as BaseEvent;

/** The request body as JSON, or the RUN_ERROR that refuses it. */
function parseBody(text: string): { body: unknown } | { error: BaseEvent } {
  if (Buffer.byteLength(text) > MAX_BODY_BYTES) return { error: invalid(`the body is over ${MAX_BODY_BYTES} bytes`) };
  try {
    return { body: JSON.parse(text) as unknown };
  } catch (err) {
    return { error: invalid(`the body is not JSON (${(err as Error).message})`) };
  }
}

/** The events that answer a request body's text. */
async function* answer(opts: AgUiOptions, text: string, signal: AbortSignal): AsyncGenerator<BaseEvent> {
  const parsed = parseBody(text);
  if ('error' in parsed) return void (yield parsed.error);
  yield* agUiRun(opts, parsed.body, signal);
}

/** A Node HTTP handler: `POST` with a `RunAgentInput` body → `text/event-stream` of AG-UI events. */
export function agUiHandler(opts: AgUiOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return async (req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'POST', 'content-type': 'text/plain' }).end('POST a RunAgentInput\n');
      return;
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const encoder = new EventEncoder();
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' });
    try {
      for await (const ev of answer(opts, Buffer.concat(chunks).toString('utf8'), gone.signal)) {
        if (gone.signal.aborted) break;
        res.write(encoder.encodeSSE(ev));
      }
    } catch (err) {
      if (!gone.signal.aborted) res.write(encoder.encodeSSE(errorEvent(err)));
    }
    res.end();
  };
}

/** A fetch-style handler (`(Request) => Response`) with the same behaviour as {@link agUiHandler}. */
export function agUiFetchHandler(opts: AgUiOptions): (request: Request) => Promise<Response> {
  return async (request) => {
    if (request.method !== 'POST')
      return new Response('POST a RunAgentInput\n', { status: 405, headers: { allow: 'POST' } });
    const text = await request.text();
    const encoder = new EventEncoder();
    const utf8 = new TextEncoder();
    const events = answer(opts, text, request.signal);
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { value, done } = await events.next();
          if (done) controller.close();
          else controller.enqueue(utf8.encode(encoder.encodeSSE(value)));
        } catch (err) {
          controller.enqueue(utf8.encode(encoder.encodeSSE(errorEvent(err))));
          controller.close();
        }
      },
      async cancel() {
        await events.return(undefined);
      },
    });
    return new Response(body, { headers: { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' } });
  };
}

const errorEvent = (err: unknown): BaseEvent =>
  ({ type: EventType.RUN_ERROR, message: (err as Error).message, code: (err as Error).name }) as BaseEvent;

export type { AgUiOptions } from './run.js';
