/**
 * `piAiProvider()` against real HTTP mock servers (no Temporal): one per wire protocol pi-ai speaks for the models
 * Keel names — Anthropic Messages (`anthropic/*`), OpenAI Responses (`openai/*`) and OpenAI Chat Completions (an
 * OpenAI-compatible server named by base URL, and the catalog providers on `openai-completions`).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { piAiProvider, type PiAiProviderOptions } from '../../activities/model/pi-ai.js';
import type { ModelProvider, ModelRequest } from '../../activities/model/provider.js';
import type { AssistantMessage, Message, ToolResultMessage } from '../../common/messages.js';
import {
  startMockProvider,
  type MockProtocolName,
  type MockProviderServer,
  type MockReply,
} from '../mock-providers/server.js';

const KEY = 'sk-test-KEEL-SECRET-0123456789';
const TOOLS: ModelRequest['tools'] = [
  {
    name: 'get_weather',
    description: 'Weather for a city',
    parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

interface Case {
  protocol: MockProtocolName;
  provider: string;
  modelId: string;
  api: string;
  /** The base URL for the mock at `url`. */
  baseUrl: (url: string) => string;
  /** How the API key is configured. */
  config: (baseUrl: string) => PiAiProviderOptions;
  path: string;
  /** The request header that carries the key, and its expected value. */
  keyHeader: [string, string];
  /** The tool call id Keel sees for a mock tool call `call_1`, and its mock item id. */
  toolCallId: string;
  /** The tool result as it appears in the request body after the tool round trip. */
  toolResultInBody: (body: any) => unknown;
  expectedToolResult: unknown;
  /** The error body text a failure of `status` with `message` surfaces as (pi-ai's `errorMessage`). */
  errorText: (status: number, message: string, type: string) => string;
  /** SSE frames of a text reply up to and including its second text delta. */
  framesThroughSecondDelta: number;
  /** The tool call block of a reply cut off inside `{"city": "Par` (as pi-ai finishes it on this protocol). */
  halfToolCall: Record<string, unknown>;
}

const CASES: Case[] = [
  {
    protocol: 'anthropic',
    provider: 'anthropic',
    modelId: 'claude-sonnet-4-5',
    api: 'anthropic-messages',
    baseUrl: (url) => url,
    // pi-ai's usual env handling: ANTHROPIC_API_KEY.
    config: (baseUrl) => ({ baseUrls: { anthropic: baseUrl }, env: { ANTHROPIC_API_KEY: KEY } }),
    path: '/v1/messages?beta=true',
    keyHeader: ['x-api-key', KEY],
    toolCallId: 'call_1',
    toolResultInBody: (body) => body.messages[2],
    expectedToolResult: {
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'call_1',
          content: 'Sunny, 21 °C',
          is_error: false,
          cache_control: { type: 'ephemeral' },
        },
      ],
    },
    errorText: (status, message, type) => `${status} ${JSON.stringify({ type: 'error', error: { type, message } })}`,
    framesThroughSecondDelta: 4, // message_start, content_block_start, 2 × content_block_delta
    halfToolCall: { type: 'toolCall', id: 'call_1', name: 'get_weather', arguments: { city: 'Par' } },
  },
  {
    protocol: 'openai-responses',
    provider: 'openai',
    modelId: 'gpt-5',
    api: 'openai-responses',
    baseUrl: (url) => `${url}/v1`,
    // KEEL_<PROVIDER>_* variables from the worker's environment.
    config: (baseUrl) => ({ env: { KEEL_OPENAI_BASE_URL: baseUrl, OPENAI_API_KEY: KEY } }),
    path: '/v1/responses',
    keyHeader: ['authorization', `Bearer ${KEY}`],
    toolCallId: 'call_1|fc_mock_0',
    toolResultInBody: (body) => body.input.find((item: { type?: string }) => item.type === 'function_call_output'),
    expectedToolResult: { type: 'function_call_output', call_id: 'call_1', output: 'Sunny, 21 °C' },
    errorText: (status, message, type) =>
      `OpenAI API error (${status}): ${JSON.stringify({ message, type, param: null, code: status === 401 ? 'invalid_api_key' : null })}`,
    framesThroughSecondDelta: 5, // response.created, output_item.added, content_part.added, 2 × output_text.delta
    halfToolCall: { type: 'toolCall', id: 'call_1|fc_mock_1', name: 'get_weather', arguments: { city: 'Par' } },
  },
  {
    protocol: 'openai-chat',
    provider: 'local',
    modelId: 'qwen3-8b',
    api: 'openai-completions',
    baseUrl: (url) => `${url}/v1`,
    // An OpenAI-compatible server: a prefix pi-ai does not know, with a base URL and a key from the worker options.
    config: (baseUrl) => ({ baseUrls: { local: baseUrl }, apiKeys: { local: KEY }, env: {} }),
    path: '/v1/chat/completions',
    keyHeader: ['authorization', `Bearer ${KEY}`],
    toolCallId: 'call_1',
    toolResultInBody: (body) => body.messages.find((m: { role: string }) => m.role === 'tool'),
    expectedToolResult: { role: 'tool', content: 'Sunny, 21 °C', tool_call_id: 'call_1' },
    errorText: (status, message, type) =>
      `${status}: ${JSON.stringify({ message, type, param: null, code: status === 401 ? 'invalid_api_key' : null })}`,
    framesThroughSecondDelta: 3, // role chunk, 2 × content chunk
    halfToolCall: {
      type: 'toolCall',
      id: 'call_1',
      name: 'get_weather',
      arguments: {},
      argumentsError:
        'Unterminated string in JSON at position 13 (line 1 column 14)\n\nReceived arguments:\n{"city": "Par',
    },
  },
];

const ERROR_TYPES: Record<MockProtocolName, Record<number, string>> = {
  anthropic: { 401: 'authentication_error', 429: 'rate_limit_error', 500: 'api_error', 400: 'invalid_request_error' },
  'openai-responses': {
    401: 'invalid_request_error',
    429: 'rate_limit_exceeded',
    500: 'server_error',
    400: 'invalid_request_error',
  },
  'openai-chat': {
    401: 'invalid_request_error',
    429: 'rate_limit_exceeded',
    500: 'server_error',
    400: 'invalid_request_error',
  },
};

function user(text: string): Message {
  return { role: 'user', content: text, timestamp: 1 };
}

function request(c: Case, messages: Message[], options: ModelRequest['options'] = {}): ModelRequest {
  return { provider: c.provider, modelId: c.modelId, systemPrompt: 'You are terse.', messages, tools: TOOLS, options };
}

function texts(message: AssistantMessage): string[] {
  return message.content.flatMap((b) => (b.type === 'text' ? [b.text] : []));
}

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  try {
    await promise;
  } catch (error) {
    expect(error).toBeInstanceOf(ApplicationFailure);
    return error as ApplicationFailure;
  }
  throw new Error('expected the call to fail');
}

function expectNoKey(value: unknown): void {
  expect(JSON.stringify(value)).not.toContain(KEY);
  if (value instanceof Error) {
    expect(value.message).not.toContain(KEY);
    expect(String(value.stack)).not.toContain(KEY);
  }
}

const never = new AbortController().signal;
const noPartial = () => {};

describe.each(CASES)('piAiProvider over $protocol ($provider/$modelId)', (c) => {
  let mock: MockProviderServer;
  let provider: ModelProvider;

  beforeEach(async () => {
    mock = await startMockProvider(c.protocol);
    const baseUrl = c.baseUrl(mock.url);
    provider = piAiProvider(c.config(baseUrl));
  });

  afterEach(async () => {
    await mock.close();
  });

  it('returns a text reply; the API key arrives in its header', async () => {
    mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'Hello world!' }], usage: { input: 12, output: 3 } } });

    const message = await provider.stream(request(c, [user('hi')]), never, noPartial);

    expect(message.role).toBe('assistant');
    expect(message.content).toEqual([expect.objectContaining({ type: 'text', text: 'Hello world!' })]);
    expect(message.stopReason).toBe('stop');
    expect(message.errorMessage).toBeUndefined();
    expect([message.api, message.provider, message.model]).toEqual([c.api, c.provider, c.modelId]);
    expect([message.usage.input, message.usage.output, message.usage.totalTokens]).toEqual([12, 3, 15]);
    expect(mock.requests).toHaveLength(1);
    expect(mock.requests[0].method).toBe('POST');
    expect(mock.requests[0].path).toBe(c.path);
    expect(mock.requests[0].headers[c.keyHeader[0]]).toBe(c.keyHeader[1]);
    expect(mock.requests[0].body.model).toBe(c.modelId);
    expect(mock.requests[0].body.stream).toBe(true);
    expect(JSON.parse(JSON.stringify(message))).toEqual(message); // plain JSON
    expectNoKey(message);
  });

  it('round-trips a tool call: request 2 carries the tool result', async () => {
    mock.enqueue({
      reply: { blocks: [{ type: 'toolCall', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } }] },
    });
    mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'It is sunny in Paris.' }] } });

    const first = await provider.stream(request(c, [user('Weather in Paris?')]), never, noPartial);
    expect(first.stopReason).toBe('toolUse');
    expect(first.content).toEqual([
      expect.objectContaining({
        type: 'toolCall',
        id: c.toolCallId,
        name: 'get_weather',
        arguments: { city: 'Paris' },
      }),
    ]);

    const result: ToolResultMessage = {
      role: 'toolResult',
      toolCallId: c.toolCallId,
      toolName: 'get_weather',
      content: [{ type: 'text', text: 'Sunny, 21 °C' }],
      isError: false,
      timestamp: 3,
    };
    const second = await provider.stream(request(c, [user('Weather in Paris?'), first, result]), never, noPartial);

    expect(texts(second)).toEqual(['It is sunny in Paris.']);
    expect(second.stopReason).toBe('stop');
    expect(mock.requests).toHaveLength(2);
    expect(c.toolResultInBody(mock.requests[1].body)).toEqual(c.expectedToolResult);
  });

  it('calls onPartial on every delta with the text so far', async () => {
    mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'Hello world!' }], chunkSize: 4 } });
    const seen: string[] = [];

    const message = await provider.stream(request(c, [user('hi')]), never, (partial) =>
      seen.push(texts(partial).join('')),
    );

    expect(seen).toEqual(['Hell', 'Hello wo', 'Hello world!']);
    expect(texts(message)).toEqual(['Hello world!']);
  });

  it('maps 429 with retry-after: 1 to a retryable ModelError.RateLimit with nextRetryDelay 1 s', async () => {
    mock.enqueue({ status: 429, headers: { 'retry-after': '1' }, message: 'Rate limit reached, slow down' });

    const failure = await failureOf(provider.stream(request(c, [user('hi')]), never, noPartial));

    expect(failure.type).toBe('ModelError.RateLimit');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.nextRetryDelay).toBe(1000);
    expect(failure.message).toBe(c.errorText(429, 'Rate limit reached, slow down', ERROR_TYPES[c.protocol][429]));
    expect(failure.details).toEqual([
      {
        usage: {
          input: 0,
          output: 0,
          cacheRead: 0,
          cacheWrite: 0,
          totalTokens: 0,
          cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 },
        },
        provider: c.provider,
        api: c.api,
        model: c.modelId,
        status: 429,
        retryAfterMs: 1000,
      },
    ]);
    expect(mock.requests).toHaveLength(1); // the SDK did not retry
  });

  it("maps 401 to a non-retryable ModelError.Auth with the provider's message, the key redacted", async () => {
    mock.enqueue({ status: 401, message: `Invalid API key: ${KEY}` });

    const failure = await failureOf(provider.stream(request(c, [user('hi')]), never, noPartial));

    expect(failure.type).toBe('ModelError.Auth');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.nextRetryDelay).toBeUndefined();
    expect(failure.message).toBe(c.errorText(401, 'Invalid API key: [REDACTED]', ERROR_TYPES[c.protocol][401]));
    expect((failure.details?.[0] as { status?: number }).status).toBe(401);
    expectNoKey(failure);
    expect(mock.requests).toHaveLength(1);
  });

  it('maps 500 to a retryable ModelError.Server', async () => {
    mock.enqueue({ status: 500, message: 'Internal failure' });

    const failure = await failureOf(provider.stream(request(c, [user('hi')]), never, noPartial));

    expect(failure.type).toBe('ModelError.Server');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.nextRetryDelay).toBeUndefined();
    expect(failure.message).toBe(c.errorText(500, 'Internal failure', ERROR_TYPES[c.protocol][500]));
    expect(mock.requests).toHaveLength(1);
  });

  it('maps a connection dropped mid-stream to a retryable ModelError.Network carrying the usage so far', async () => {
    mock.enqueue({
      reply: { blocks: [{ type: 'text', text: 'This reply is cut off in the middle' }] },
      dropAfterFrames: 4,
    });

    const failure = await failureOf(provider.stream(request(c, [user('hi')]), never, noPartial));

    expect(failure.type).toBe('ModelError.Network');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toBe('terminated: other side closed (UND_ERR_SOCKET)');
    expect(mock.requests[0].droppedByServer).toBe(true);
    const usage = (failure.details?.[0] as { usage: { input: number } }).usage;
    // Anthropic reports input tokens in message_start; the OpenAI protocols only at the end.
    expect(usage.input).toBe(c.protocol === 'anthropic' ? 10 : 0);
    expectNoKey(failure);
  });

  it('passes stopReason length through for a reply cut off in a half-written tool call', async () => {
    mock.enqueue({
      reply: {
        blocks: [
          { type: 'text', text: 'Checking.' },
          { type: 'toolCall', id: 'call_1', name: 'get_weather', arguments: '{"city": "Par' },
        ],
        stop: 'length',
      },
    });

    const message = await provider.stream(request(c, [user('hi')]), never, noPartial);

    expect(message.stopReason).toBe('length');
    expect(message.errorMessage).toBeUndefined();
    expect(texts(message)).toEqual(['Checking.']);
    expect(message.content[1]).toEqual(c.halfToolCall);
    expect(message.content).toHaveLength(2);
  });

  it('on abort while the server streams slowly: resolves aborted with the partial text at once and closes the socket', async () => {
    mock.enqueue({
      reply: { blocks: [{ type: 'text', text: 'one two three four five six seven eight' }], chunkSize: 4 },
      delayMs: 100,
    });
    const controller = new AbortController();
    const seen: string[] = [];
    let abortedAt = 0;

    const message = await provider.stream(request(c, [user('hi')]), controller.signal, (partial) => {
      seen.push(texts(partial).join(''));
      if (seen.length === 2) {
        abortedAt = Date.now();
        controller.abort();
      }
    });

    // Frames come every 100 ms: resolving well before the next one means the call did not wait for the stream.
    expect(Date.now() - abortedAt).toBeLessThan(80);
    expect(message.stopReason).toBe('aborted');
    expect(message.errorMessage).toBe('Request was aborted');
    expect(texts(message)).toEqual(['one two ']);
    expect(seen).toEqual(['one ', 'one two ']);
    await mock.requests[0].closed;
    expect(mock.requests[0].clientClosedEarly).toBe(true);
    // Nothing was sent after the second text delta: the HTTP request was aborted.
    expect(mock.requests[0].framesSent).toBe(c.framesThroughSecondDelta);
    expectNoKey(message);
  });

  it('resolves aborted at once, without a request, when the signal is already aborted', async () => {
    const controller = new AbortController();
    controller.abort();

    const message = await provider.stream(request(c, [user('hi')]), controller.signal, noPartial);

    expect(message).toMatchObject({
      role: 'assistant',
      content: [],
      stopReason: 'aborted',
      errorMessage: 'Request was aborted',
    });
    expect([message.api, message.provider, message.model]).toEqual([c.api, c.provider, c.modelId]);
    expect(mock.requests).toHaveLength(0);
  });
});

describe('piAiProvider: thinking blocks', () => {
  let mock: MockProviderServer;
  afterEach(async () => {
    await mock.close();
  });

  const thinkingReply: MockReply = {
    blocks: [
      { type: 'thinking', thinking: 'The user wants a greeting.', signature: 'SIG-abc123' },
      { type: 'text', text: 'Hello!' },
    ],
  };

  it('Anthropic: keeps the thinking block and its signature, and sends both back on the next request', async () => {
    mock = await startMockProvider('anthropic');
    const provider = piAiProvider({ baseUrls: { anthropic: mock.url }, env: { ANTHROPIC_API_KEY: KEY } });
    mock.enqueue({ reply: thinkingReply }, { reply: { blocks: [{ type: 'text', text: 'Bye!' }] } });
    const c = CASES[0];
    const thinkingSeen: string[] = [];

    const first = await provider.stream(request(c, [user('hi')], { reasoning: 'medium' }), never, (partial) => {
      const block = partial.content.find((b) => b.type === 'thinking');
      if (block?.type === 'thinking') thinkingSeen.push(block.thinking);
    });

    expect(first.content).toEqual([
      { type: 'thinking', thinking: 'The user wants a greeting.', thinkingSignature: 'SIG-abc123' },
      { type: 'text', text: 'Hello!' },
    ]);
    expect(thinkingSeen.at(-1)).toBe('The user wants a greeting.');
    expect(mock.requests[0].body.thinking).toMatchObject({ type: 'enabled' });

    await provider.stream(request(c, [user('hi'), first, user('bye')], { reasoning: 'medium' }), never, noPartial);

    expect(mock.requests[1].body.messages[1]).toEqual({
      role: 'assistant',
      content: [
        { type: 'thinking', thinking: 'The user wants a greeting.', signature: 'SIG-abc123' },
        { type: 'text', text: 'Hello!' },
      ],
    });
  });

  it('OpenAI Responses: keeps the reasoning item (encrypted_content) as the signature and sends it back', async () => {
    mock = await startMockProvider('openai-responses');
    const provider = piAiProvider({ baseUrls: { openai: `${mock.url}/v1` }, env: { OPENAI_API_KEY: KEY } });
    mock.enqueue({ reply: thinkingReply }, { reply: { blocks: [{ type: 'text', text: 'Bye!' }] } });
    const c = CASES[1];

    const first = await provider.stream(request(c, [user('hi')], { reasoning: 'low' }), never, noPartial);

    const reasoningItem = {
      type: 'reasoning',
      id: 'rs_mock_0',
      summary: [{ type: 'summary_text', text: 'The user wants a greeting.' }],
      encrypted_content: 'SIG-abc123',
    };
    expect(first.content[0]).toEqual({
      type: 'thinking',
      thinking: 'The user wants a greeting.',
      thinkingSignature: JSON.stringify(reasoningItem),
    });
    expect(first.content[1]).toMatchObject({ type: 'text', text: 'Hello!' });
    expect(mock.requests[0].body.reasoning).toEqual({ effort: 'low', summary: 'auto' });
    expect(mock.requests[0].body.include).toEqual(['reasoning.encrypted_content']);

    await provider.stream(request(c, [user('hi'), first, user('bye')], { reasoning: 'low' }), never, noPartial);

    const input = mock.requests[1].body.input as { type?: string }[];
    expect(input.filter((item) => item.type === 'reasoning')).toEqual([reasoningItem]);
  });

  it('Chat Completions: keeps streamed reasoning_content as a thinking block', async () => {
    mock = await startMockProvider('openai-chat');
    const provider = piAiProvider({ baseUrls: { local: `${mock.url}/v1` }, env: {} });
    mock.enqueue({ reply: thinkingReply });

    const message = await provider.stream(request(CASES[2], [user('hi')]), never, noPartial);

    expect(message.content).toEqual([
      { type: 'thinking', thinking: 'The user wants a greeting.', thinkingSignature: 'reasoning_content' },
      { type: 'text', text: 'Hello!' },
    ]);
    // A keyless local server still gets a placeholder bearer token, never a real key.
    expect(mock.requests[0].headers.authorization).toBe('Bearer keel-no-key');
  });
});

describe('piAiProvider: failures outside the happy path', () => {
  let mock: MockProviderServer | undefined;
  afterEach(async () => {
    await mock?.close();
    mock = undefined;
  });

  it('maps an Anthropic context overflow (400 "prompt is too long") to non-retryable ModelError.ContextOverflow', async () => {
    mock = await startMockProvider('anthropic');
    const provider = piAiProvider({ baseUrls: { anthropic: mock.url }, env: { ANTHROPIC_API_KEY: KEY } });
    mock.enqueue({ status: 400, message: 'prompt is too long: 213462 tokens > 200000 maximum' });

    const failure = await failureOf(provider.stream(request(CASES[0], [user('hi')]), never, noPartial));

    expect(failure.type).toBe('ModelError.ContextOverflow');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(
      `400 ${JSON.stringify({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long: 213462 tokens > 200000 maximum' } })}`,
    );
  });

  it('maps a plain 400 to non-retryable ModelError.BadRequest, 403 to Auth and 404 to NotFound', async () => {
    mock = await startMockProvider('openai-responses');
    const provider = piAiProvider({ baseUrls: { openai: `${mock.url}/v1` }, env: { OPENAI_API_KEY: KEY } });
    mock.enqueue(
      { status: 400, message: 'Unsupported parameter' },
      { status: 403, message: 'Forbidden' },
      { status: 404, message: 'No such model' },
    );

    const types: [string | null | undefined, boolean | null | undefined][] = [];
    for (let i = 0; i < 3; i++) {
      const failure = await failureOf(provider.stream(request(CASES[1], [user('hi')]), never, noPartial));
      types.push([failure.type, failure.nonRetryable]);
    }

    expect(types).toEqual([
      ['ModelError.BadRequest', true],
      ['ModelError.Auth', true],
      ['ModelError.NotFound', true],
    ]);
  });

  it('maps a 429 quota exhaustion (insufficient_quota) to non-retryable ModelError.QuotaExceeded', async () => {
    mock = await startMockProvider('openai-responses');
    const provider = piAiProvider({ baseUrls: { openai: `${mock.url}/v1` }, env: { OPENAI_API_KEY: KEY } });
    mock.enqueue({
      status: 429,
      body: {
        error: {
          message: 'You exceeded your current quota.',
          type: 'insufficient_quota',
          param: null,
          code: 'insufficient_quota',
        },
      },
    });

    const failure = await failureOf(provider.stream(request(CASES[1], [user('hi')]), never, noPartial));

    expect(failure.type).toBe('ModelError.QuotaExceeded');
    expect(failure.nonRetryable).toBe(true);
  });

  it('honours retry-after-ms and an HTTP-date retry-after on 503', async () => {
    mock = await startMockProvider('anthropic');
    const provider = piAiProvider({ baseUrls: { anthropic: mock.url }, env: { ANTHROPIC_API_KEY: KEY } });
    mock.enqueue(
      { status: 503, headers: { 'retry-after-ms': '2500' }, message: 'Overloaded' },
      { status: 503, headers: { 'retry-after': new Date(Date.now() + 30_000).toUTCString() }, message: 'Overloaded' },
    );

    const a = await failureOf(provider.stream(request(CASES[0], [user('hi')]), never, noPartial));
    const b = await failureOf(provider.stream(request(CASES[0], [user('hi')]), never, noPartial));

    expect([a.type, a.nonRetryable, a.nextRetryDelay]).toEqual(['ModelError.Server', false, 2500]);
    expect(b.type).toBe('ModelError.Server');
    expect(b.nextRetryDelay).toBeGreaterThan(25_000);
    expect(b.nextRetryDelay).toBeLessThanOrEqual(30_000);
  });

  it('maps a refused connection (nothing listening) to a retryable ModelError.Network', async () => {
    const closed = await startMockProvider('anthropic');
    const url = closed.url;
    await closed.close();
    const provider = piAiProvider({ baseUrls: { anthropic: url }, env: { ANTHROPIC_API_KEY: KEY } });

    const failure = await failureOf(provider.stream(request(CASES[0], [user('hi')]), never, noPartial));

    expect(failure.type).toBe('ModelError.Network');
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toBe(`Connection error.: connect ECONNREFUSED ${url.slice('http://'.length)}`);
  });

  it('fails non-retryably with ModelError.Auth, before any request, when no API key is configured', async () => {
    mock = await startMockProvider('anthropic');
    const provider = piAiProvider({ baseUrls: { anthropic: mock.url }, env: {} });

    const failure = await failureOf(provider.stream(request(CASES[0], [user('hi')]), never, noPartial));

    expect(failure.type).toBe('ModelError.Auth');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(
      'No credentials for provider "anthropic": set its usual environment variable (e.g. ANTHROPIC_API_KEY, OPENAI_API_KEY), KEEL_ANTHROPIC_API_KEY, or the worker option apiKeys["anthropic"].',
    );
    expect(mock.requests).toHaveLength(0);
  });

  it('uses KEEL_<PROVIDER>_API_KEY and apiKeys over the provider variable; apiKeys wins', async () => {
    mock = await startMockProvider('anthropic');
    mock.enqueue(
      { reply: { blocks: [{ type: 'text', text: 'a' }] } },
      { reply: { blocks: [{ type: 'text', text: 'b' }] } },
    );
    const env = { ANTHROPIC_API_KEY: 'sk-from-anthropic-var', KEEL_ANTHROPIC_API_KEY: 'sk-from-keel-var-123' };

    await piAiProvider({ baseUrls: { anthropic: mock.url }, env }).stream(
      request(CASES[0], [user('hi')]),
      never,
      noPartial,
    );
    await piAiProvider({
      baseUrls: { anthropic: mock.url },
      env,
      apiKeys: { anthropic: 'sk-from-options-456' },
    }).stream(request(CASES[0], [user('hi')]), never, noPartial);

    expect(mock.requests.map((r) => r.headers['x-api-key'])).toEqual(['sk-from-keel-var-123', 'sk-from-options-456']);
  });

  it('reads a key from the file <NAME>_FILE names (ANTHROPIC_API_KEY_FILE, KEEL_ANTHROPIC_API_KEY_FILE); an unreadable one says which', async () => {
    mock = await startMockProvider('anthropic');
    mock.enqueue(
      { reply: { blocks: [{ type: 'text', text: 'a' }] } },
      { reply: { blocks: [{ type: 'text', text: 'b' }] } },
    );
    const dir = mkdtempSync(join(tmpdir(), 'keel-keys-'));
    writeFileSync(join(dir, 'anthropic'), 'sk-from-file-anthropic-789\n');
    writeFileSync(join(dir, 'keel'), 'sk-from-file-keel-012');
    await piAiProvider({
      baseUrls: { anthropic: mock.url },
      env: { ANTHROPIC_API_KEY_FILE: join(dir, 'anthropic') },
    }).stream(request(CASES[0], [user('hi')]), never, noPartial);
    await piAiProvider({
      baseUrls: { anthropic: mock.url },
      env: { ANTHROPIC_API_KEY_FILE: join(dir, 'anthropic'), KEEL_ANTHROPIC_API_KEY_FILE: join(dir, 'keel') },
    }).stream(request(CASES[0], [user('hi')]), never, noPartial);
    expect(mock.requests.map((r) => r.headers['x-api-key'])).toEqual([
      'sk-from-file-anthropic-789',
      'sk-from-file-keel-012',
    ]);
    const missing = join(dir, 'missing');
    await expect(
      piAiProvider({ baseUrls: { anthropic: mock.url }, env: { ANTHROPIC_API_KEY_FILE: missing } }).stream(
        request(CASES[0], [user('hi')]),
        never,
        noPartial,
      ),
    ).rejects.toThrow(
      `ANTHROPIC_API_KEY_FILE names ${missing}, which cannot be read (ENOENT): fix the path or the file's permissions for the worker's user, or set ANTHROPIC_API_KEY instead`,
    );
    expect(mock.requests).toHaveLength(2);
  });

  it('serves a catalog provider on openai-completions (deepseek) through a base URL override', async () => {
    mock = await startMockProvider('openai-chat');
    const provider = piAiProvider({ env: { KEEL_DEEPSEEK_BASE_URL: `${mock.url}/v1`, DEEPSEEK_API_KEY: KEY } });
    mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'Hi from DeepSeek' }] } });

    const message = await provider.stream(
      {
        provider: 'deepseek',
        modelId: 'deepseek-flash',
        systemPrompt: '',
        messages: [user('hi')],
        tools: [],
        options: {},
      },
      never,
      noPartial,
    );

    expect(texts(message)).toEqual(['Hi from DeepSeek']);
    expect([message.api, message.provider, message.model]).toEqual([
      'openai-completions',
      'deepseek',
      'deepseek-flash',
    ]);
    expect(mock.requests[0].path).toBe('/v1/chat/completions');
    expect(mock.requests[0].headers.authorization).toBe(`Bearer ${KEY}`);
  });

  it('fails non-retryably with ModelError.UnknownModel for a model pi-ai does not know', async () => {
    const provider = piAiProvider({ env: { ANTHROPIC_API_KEY: KEY } });

    const failure = await failureOf(
      provider.stream({ ...request(CASES[0], [user('hi')]), modelId: 'claude-nonexistent' }, never, noPartial),
    );

    expect(failure.type).toBe('ModelError.UnknownModel');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toMatch(
      /^Unknown model "anthropic\/claude-nonexistent": pi-ai's provider "anthropic" has no model "claude-nonexistent"/,
    );
  });
});

describe('piAiProvider.checkModel', () => {
  const provider = piAiProvider({ env: {} });
  const check = (name: string) => provider.checkModel!(name);

  it('accepts a known model named in full or by its bare id', () => {
    expect(check('anthropic/claude-sonnet-4-5')).toBeUndefined();
    expect(check('openai/gpt-5')).toBeUndefined();
    expect(check('claude-sonnet-4-5')).toBeUndefined();
    expect(check('gpt-5')).toBeUndefined();
  });

  it('lists the provider models for an unknown model of a known provider', () => {
    const text = check('anthropic/claude-nonexistent');
    expect(text).toMatch(
      /^Unknown model "anthropic\/claude-nonexistent": pi-ai's provider "anthropic" has no model "claude-nonexistent"\. /,
    );
    expect(text).toContain(
      'Name a model as "<provider>/<model-id>", e.g. "anthropic/claude-sonnet-4-5", "openai/gpt-5".',
    );
    expect(text).toContain('claude-sonnet-4-5');
    expect(text).toContain('claude-haiku-4-5');
  });

  it('lists the providers and the base-URL setting for an unknown provider', () => {
    const text = check('nosuch/some-model');
    expect(text).toMatch(
      /^Unknown model "nosuch\/some-model": "nosuch" is not a pi-ai provider and no base URL is configured for it\./,
    );
    expect(text).toContain('anthropic, ');
    expect(text).toContain('openai, ');
    expect(text).toContain('KEEL_NOSUCH_BASE_URL');
  });

  it('explains how to name a model for an unknown bare id', () => {
    expect(check('claude-nonexistent')).toBe(
      'Unknown model "claude-nonexistent". Name a model as "<provider>/<model-id>" with a provider and model pi-ai knows, e.g. "anthropic/claude-sonnet-4-5", "openai/gpt-5"; or use any "<provider>/<model-id>" for an OpenAI-compatible server whose base URL the worker configures (KEEL_<PROVIDER>_BASE_URL or the baseUrls option).',
    );
  });

  it('accepts any model id of an OpenAI-compatible server with a configured base URL', () => {
    const withServer = piAiProvider({ env: { KEEL_OLLAMA_BASE_URL: 'http://localhost:11434/v1' } });
    expect(withServer.checkModel!('ollama/llama3.1:8b')).toBeUndefined();
    // A bare id may belong to that server (a `*` registry passes only the part after the prefix).
    expect(withServer.checkModel!('llama3.1:8b')).toBeUndefined();
    // The base URL of a catalog provider does not make unknown ids of it valid.
    const withOverride = piAiProvider({ baseUrls: { anthropic: 'http://localhost:1' }, env: {} });
    expect(withOverride.checkModel!('anthropic/claude-nonexistent')).toMatch(/^Unknown model/);
  });
});
