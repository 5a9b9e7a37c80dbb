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
      return response;
    } catch (error) {
      capture.transportError = error;
      throw error;
    }
  };
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
