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
    const headers = new Headers(input instanceof Request ? input.headers : undefined);
    new Headers(init?.headers).forEach((value, key) => headers.set(key, value));
    for (const name of KEY_HEADERS) {
      const value = headers
        .get(name)
        ?.replace(/^Bearer\s+/i, '')
        .trim();
      if (value) secrets.add(value);
    }
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

export function lowerCaseKeys(record: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k.toLowerCase(), v]));
}
