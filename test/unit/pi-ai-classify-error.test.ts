/** `classifyModelError` and its helpers, without HTTP: the mapping table of spec §4.2. */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import {
  classifyModelError,
  isProgrammingError,
  redactSecrets,
  retryAfterMs,
  type ModelErrorDetails,
} from '../../activities/model/classify-error.js';
import type { AssistantMessage, Usage } from '../../common/messages.js';

const USAGE: Usage = {
  input: 120,
  output: 7,
  cacheRead: 0,
  cacheWrite: 0,
  totalTokens: 127,
  cost: { input: 0.1, output: 0.2, cacheRead: 0, cacheWrite: 0, total: 0.3 },
};

function failed(errorMessage: string, extra: Record<string, unknown> = {}): AssistantMessage {
  return {
    role: 'assistant',
    content: [{ type: 'text', text: 'partial' }],
    api: 'anthropic-messages',
    provider: 'anthropic',
    model: 'claude-sonnet-4-5',
    usage: USAGE,
    stopReason: 'error',
    errorMessage,
    timestamp: 1,
    ...extra,
  } as AssistantMessage;
}

const response = (status: number, headers: Record<string, string> = {}) => ({ status, headers });

function summary(f: ApplicationFailure) {
  return { type: f.type, nonRetryable: f.nonRetryable, nextRetryDelay: f.nextRetryDelay ?? undefined };
}

describe('classifyModelError: by HTTP status', () => {
  it.each([
    [408, 'ModelError.Timeout', false],
    [409, 'ModelError.Conflict', false],
    [429, 'ModelError.RateLimit', false],
    [500, 'ModelError.Server', false],
    [502, 'ModelError.Server', false],
    [503, 'ModelError.Server', false],
    [529, 'ModelError.Server', false],
    [400, 'ModelError.BadRequest', true],
    [422, 'ModelError.BadRequest', true],
    [401, 'ModelError.Auth', true],
    [403, 'ModelError.Auth', true],
    [404, 'ModelError.NotFound', true],
    [413, 'ModelError.ContextOverflow', true],
  ])('%i → %s (nonRetryable %s)', (status, type, nonRetryable) => {
    const f = classifyModelError({ message: failed(`${status} provider says no`), response: response(status) });
    expect(summary(f)).toEqual({ type, nonRetryable, nextRetryDelay: undefined });
    expect(f.message).toBe(`${status} provider says no`);
  });

  it("carries the failed attempt's usage, ids and status in details[0]", () => {
    const f = classifyModelError({ message: failed('429 slow down'), response: response(429, { 'retry-after': '3' }) });
    expect(f.details).toEqual([
      {
        usage: USAGE,
        provider: 'anthropic',
        api: 'anthropic-messages',
        model: 'claude-sonnet-4-5',
        status: 429,
        retryAfterMs: 3000,
      } satisfies ModelErrorDetails,
    ]);
    expect(f.nextRetryDelay).toBe(3000);
  });

  it('classifies context overflow with pi-ai even when the status is a plain 400', () => {
    const f = classifyModelError({
      message: failed('400 {"error":{"message":"Your input exceeds the context window of this model"}}'),
      response: response(400),
    });
    expect(summary(f)).toEqual({ type: 'ModelError.ContextOverflow', nonRetryable: true, nextRetryDelay: undefined });
  });

  it('sets no nextRetryDelay on non-retryable failures even with retry-after', () => {
    const f = classifyModelError({ message: failed('401 bad key'), response: response(401, { 'retry-after': '5' }) });
    expect(summary(f)).toEqual({ type: 'ModelError.Auth', nonRetryable: true, nextRetryDelay: undefined });
  });
});

describe('classifyModelError: without an error status', () => {
  it('a fetch that threw (no response) is a retryable ModelError.Network', () => {
    const cause = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET' });
    const f = classifyModelError({
      message: failed('Connection error.: read ECONNRESET'),
      transportError: new TypeError('fetch failed', { cause }),
    });
    expect(summary(f)).toEqual({ type: 'ModelError.Network', nonRetryable: false, nextRetryDelay: undefined });
  });

  it('a fetch that timed out is a retryable ModelError.Timeout', () => {
    const cause = Object.assign(new Error('Connect Timeout Error'), { code: 'UND_ERR_CONNECT_TIMEOUT' });
    const f = classifyModelError({
      message: failed('Connection error.'),
      transportError: new TypeError('fetch failed', { cause }),
    });
    expect(summary(f)).toEqual({ type: 'ModelError.Timeout', nonRetryable: false, nextRetryDelay: undefined });
  });

  it.each([
    ['terminated: other side closed', 'ModelError.Network'],
    ['Anthropic stream ended without a stop reason', 'ModelError.Network'],
    ['{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}', 'ModelError.Server'],
    ['Rate limit exceeded mid-stream', 'ModelError.RateLimit'],
    ['Request timed out.', 'ModelError.Timeout'],
  ])('a stream that broke after 200 with %j is retryable %s (pi-ai calls it transient)', (text, type) => {
    const f = classifyModelError({ message: failed(text), response: response(200) });
    expect(summary(f)).toEqual({ type, nonRetryable: false, nextRetryDelay: undefined });
  });

  it.each(['refusal', 'content_filter', 'incomplete.content_filter', 'sensitive'])(
    'a %s stop is a non-retryable ModelError.ContentFilter',
    (rawStopReason) => {
      const f = classifyModelError({
        message: failed('The model refused', { rawStopReason }),
        response: response(200),
      });
      expect(summary(f)).toEqual({ type: 'ModelError.ContentFilter', nonRetryable: true, nextRetryDelay: undefined });
    },
  );

  it('an error pi-ai does not call transient is a non-retryable ModelError.Unknown', () => {
    const f = classifyModelError({ message: failed('Unhandled stop reason: mystery'), response: response(200) });
    expect(summary(f)).toEqual({ type: 'ModelError.Unknown', nonRetryable: true, nextRetryDelay: undefined });
  });

  it('a thrown error is judged like a failed message, with empty usage', () => {
    const f = classifyModelError({ error: new Error('socket hang up') });
    expect(summary(f)).toEqual({ type: 'ModelError.Network', nonRetryable: false, nextRetryDelay: undefined });
    expect(f.message).toBe('socket hang up');
    expect((f.details?.[0] as ModelErrorDetails).usage.totalTokens).toBe(0);
  });

  it('passes an ApplicationFailure through unchanged', () => {
    const original = ApplicationFailure.nonRetryable('already decided', 'ModelError.Auth');
    expect(classifyModelError({ error: original })).toBe(original);
  });

  it('redacts secrets from the message', () => {
    const f = classifyModelError({
      message: failed('401 Incorrect API key provided: sk-live-abcdef123456'),
      response: response(401),
      secrets: ['sk-live-abcdef123456'],
    });
    expect(f.message).toBe('401 Incorrect API key provided: [REDACTED]');
    expect(JSON.stringify(f.details)).not.toContain('sk-live');
  });
});

describe('retryAfterMs', () => {
  const now = Date.parse('2030-01-01T00:00:00Z');

  it.each([
    [{ 'retry-after': '1' }, 1000],
    [{ 'retry-after': '0.5' }, 500],
    [{ 'Retry-After': '7' }, 7000],
    [{ 'retry-after-ms': '250' }, 250],
    [{ 'retry-after-ms': '250', 'retry-after': '9' }, 250],
    [{ 'retry-after': 'Tue, 01 Jan 2030 00:00:30 GMT' }, 30_000],
    [{ 'retry-after': 'Mon, 31 Dec 2029 23:59:00 GMT' }, undefined],
    [{ 'retry-after': '0' }, undefined],
    [{ 'retry-after': 'soon' }, undefined],
    [{}, undefined],
  ])('%j → %s', (headers, expected) => {
    expect(retryAfterMs(headers as Record<string, string>, now)).toBe(expected);
  });
});

describe('redactSecrets', () => {
  it('replaces every occurrence and ignores short values', () => {
    expect(redactSecrets('a sk-12345678 b sk-12345678', ['sk-12345678', 'abc'])).toBe('a [REDACTED] b [REDACTED]');
  });

  it('a key with a newline or NUL: redacted whole, JSON-escaped, and piece by piece', () => {
    const key = 'sk-ant-first-part\nsecond-part-xyz\u0000third-part-123';
    expect(redactSecrets(`raw "${key}"`, [key])).toBe('raw "[REDACTED]"');
    expect(redactSecrets(`quoted ${JSON.stringify(key)}`, [key])).toBe('quoted "[REDACTED]"');
    expect(redactSecrets('one line: second-part-xyz, sk-ant-first-part', [key])).toBe(
      'one line: [REDACTED], [REDACTED]',
    );
    expect(redactSecrets(`padded: ${key.trim()}`, [` ${key} `])).toBe('padded: [REDACTED]');
  });
});

describe('a thrown programming error quoting a key', () => {
  it('is redacted from the failure message, stack and cause', () => {
    const key = 'sk-ant-KEEL-SECRET\nrest-of-the-key';
    const thrown = new TypeError(`Headers.append: "${key}" is an invalid header value.`);
    const failure = classifyModelError({ error: thrown, secrets: [key] });
    expect(failure.type).toBe('ModelError.ProgrammingError');
    expect(failure.message).toBe('TypeError: Headers.append: "[REDACTED]" is an invalid header value.');
    expect((failure.cause as Error).message).toBe('Headers.append: "[REDACTED]" is an invalid header value.');
    expect((failure.cause as Error).name).toBe('TypeError');
    for (const text of [failure.message, failure.stack, (failure.cause as Error).stack])
      expect(text).not.toContain('KEEL-SECRET');
  });
});

describe('programming errors are not retried', () => {
  it("TypeError, ReferenceError and a code SyntaxError are; JSON.parse's SyntaxError (a malformed response) and plain Errors are not", () => {
    let jsonError: unknown;
    try {
      JSON.parse('{"cut');
    } catch (error) {
      jsonError = error;
    }
    const codeSyntax = new SyntaxError('Invalid regular expression: /(/: Unterminated group');
    expect(
      [
        new TypeError('x is not a function'),
        new ReferenceError('y is not defined'),
        codeSyntax,
        jsonError,
        new Error('ECONNRESET'),
      ].map(isProgrammingError),
    ).toEqual([true, true, true, false, false]);
    const f = classifyModelError({ error: new TypeError("Cannot read properties of undefined (reading 'x')") });
    expect([f.type, f.nonRetryable, f.message]).toEqual([
      'ModelError.ProgrammingError',
      true,
      "TypeError: Cannot read properties of undefined (reading 'x')",
    ]);
  });
});
