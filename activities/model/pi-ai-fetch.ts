/** The `fetch` pi-ai's SDKs use for one attempt: it records what the failure classification needs and the keys to redact. */
import type { CapturedResponse } from './classify-error.js';

/** The request and response hooks of one attempt. */
export interface AttemptCapture {
  response?: CapturedResponse;
  transportError?: unknown;
}

const KEY_HEADERS = ['x-api-key', 'authorization', 'api-key', 'x-goog-api-key'];

/**
 * A `fetch` that records the status and headers of every response (pi-ai's `onResponse` fires only for successful
 * ones: the SDKs throw on an error status first), what `fetch` threw when no response came, and the API key headers
 * it sends (to redact them).
 */
export function capturingFetch(capture: AttemptCapture, secrets: Set<string>): typeof globalThis.fetch {
  return async (input, init) => {
    // raw values: a key with a newline or NUL makes `Headers` throw an error that quotes it
    for (const [key, value] of rawHeaders(input instanceof Request ? input.headers : undefined, init?.headers)) {
      if (!KEY_HEADERS.includes(key.toLowerCase())) continue;
      const secret = value.replace(/^\s*Bearer\s+/i, '').trim();
      if (secret) secrets.add(secret);
    }
    // invalid headers throw here, before the request: not a transport error (a retry would fail the same way)
    new Headers(init?.headers);
    try {
      const response = await globalThis.fetch(input, init);
      const record: Record<string, string> = {};
      response.headers.forEach((value, key) => (record[key] = value));
      capture.response = { status: response.status, headers: record };
      capture.transportError = undefined;
      return pacedStream(response);
    } catch (error) {
      capture.transportError = error;
      throw error;
    }
  };
}

/** Most ms the events of a streamed response are handled without the event loop getting a turn (pi-ai.ts). */
export const BODY_YIELD_AFTER_MS = 10;

/** Most bytes of a streamed response body handed on in one turn of the event loop (a larger read, in pieces). */
export const BODY_PIECE_BYTES = 4 * 1024;

/**
 * A streamed (`text/event-stream`) response whose body lets the event loop run: it hands the body on in pieces of at
 * most {@link BODY_PIECE_BYTES}, each after a turn of the loop. Without it, a body that arrived faster than it is parsed
 * (a large tool call, a worker busy for a moment) is read, parsed and handed on through pi-ai's event streams in one
 * chain of promise callbacks, and nothing else of the worker runs until the buffered body is drained (0.6.2: a 1 MB
 * tool call held the loop for ~0.6 s at once); with it, one turn handles the events of at most one piece. A turn costs
 * well under a millisecond, once per piece. The response keeps everything else (status, headers, `url`); other
 * responses are passed on as they are.
 */
function pacedStream(response: Response): Response {
  const body = response.body;
  if (!body || !response.ok || !(response.headers.get('content-type') ?? '').includes('text/event-stream'))
    return response;
  const reader = body.getReader();
  let held: Uint8Array | undefined;
  const paced = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        await new Promise((resolve) => setImmediate(resolve));
        let piece: Uint8Array;
        if (held) piece = held;
        else {
          const read = await reader.read();
          if (read.done) return controller.close();
          piece = read.value as Uint8Array;
        }
        controller.enqueue(piece.subarray(0, BODY_PIECE_BYTES));
        held = piece.length > BODY_PIECE_BYTES ? piece.subarray(BODY_PIECE_BYTES) : undefined;
      },
      cancel: (reason) => reader.cancel(reason),
    },
    { highWaterMark: 0 },
  );
  Object.defineProperty(response, 'body', { value: paced, configurable: true });
  return response;
}

/** Name/value pairs of request headers in any `HeadersInit` form, unvalidated. */
function rawHeaders(...inits: (ConstructorParameters<typeof Headers>[0] | undefined)[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (const init of inits) {
    if (!init) continue;
    if (init instanceof Headers) init.forEach((value, key) => pairs.push([key, value]));
    else if (Array.isArray(init)) for (const [key, value] of init) pairs.push([String(key), String(value)]);
    else for (const [key, value] of Object.entries(init)) pairs.push([key, String(value)]);
  }
  return pairs;
}

export function lowerCaseKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k.toLowerCase(), v]));
}
