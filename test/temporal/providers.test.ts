/**
 * The pi-ai provider end to end: full `agentWorkflow` runs on the real dev server against the mock model servers
 * (real HTTP on 127.0.0.1) for each wire protocol — Anthropic Messages (`anthropic/*`), OpenAI Responses (`openai/*`)
 * and an OpenAI-compatible Chat Completions server named by base URL (`local/*`). docs/architecture.md#run-input-and-result (usage includes failed
 * attempts), §4.2 (who retries what), §4.4 (cancellation reaches the HTTP request), §4.5 (partial text as heartbeat
 * details).
 */
import { WorkflowFailedError } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { afterEach, describe, expect, it } from 'vitest';
import type { AgentRunHandle } from '../../client/agent-client.js';
import type { AgentHooks } from '../../activities/hooks.js';
import { piAiProvider } from '../../activities/model/pi-ai.js';
import { defineTool } from '../../activities/tools/define-tool.js';
import { lengthTruncated } from '../../common/errors.js';
import type { ModelHeartbeat } from '../../common/events.js';
import type { AssistantMessage, Message, Usage } from '../../common/messages.js';
import { streamedText } from '../../common/model-heartbeat.js';
import {
  startMockProvider,
  type MockProtocolName,
  type MockProviderServer,
  type MockReply,
} from '../mock-providers/server.js';
import { historyText, startKeel, strip, until, workflowTaskFailures, type Keel } from './harness.js';

const KEY = 'sk-test-KEEL-SECRET-e2e-0123456789';
const PROTOCOLS: MockProtocolName[] = ['anthropic', 'openai-responses', 'openai-chat'];

let executions = 0;
const weather = defineTool({
  name: 'get_weather',
  description: 'Weather for a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  execute: async (_id, args: { city: string }) => {
    executions += 1;
    return { content: [{ type: 'text', text: `Sunny in ${args.city}, 21 °C` }] };
  },
});

interface Case {
  protocol: MockProtocolName;
  model: string;
  /** Fields pi-ai adds to an assistant message of this protocol (beyond content and stopReason). */
  extra: (stop: 'stop' | 'toolUse' | 'length') => Record<string, unknown>;
  /** A text block as recorded; `index` is its position in the reply (OpenAI Responses signs text with its item id). */
  text: (text: string, index: number) => Record<string, unknown>;
  /** Keel's tool call id for mock call `call_1` at reply position `index`. */
  toolCallId: (index: number) => string;
  /** The tool result as the protocol sends it back on the next request. */
  toolResultInBody: (body: any) => unknown;
  toolResultWire: (text: string) => unknown;
  /** The error text of a failure response (pi-ai's `errorMessage`). */
  errorText: (status: number, message: string) => string;
  /** A tool call block cut off inside `{"city": "Par` by the token limit, at reply position `index`. */
  halfToolCall: (index: number) => Record<string, unknown>;
  /** Usage of an attempt whose stream was dropped after the first frames (Anthropic reports input tokens first). */
  droppedUsage: { input: number; output: number };
}

const CASES: Case[] = [
  {
    protocol: 'anthropic',
    model: 'anthropic/claude-sonnet-4-5',
    extra: (stop) => ({
      responseId: 'msg_mock_1',
      rawStopReason: { stop: 'end_turn', toolUse: 'tool_use', length: 'max_tokens' }[stop],
    }),
    text: (text) => ({ type: 'text', text }),
    toolCallId: () => 'call_1',
    toolResultInBody: (body) => body.messages[2],
    toolResultWire: (text) => ({
      role: 'user',
      content: [
        {
          type: 'tool_result',
          tool_use_id: 'call_1',
          content: text,
          is_error: false,
          cache_control: { type: 'ephemeral' },
        },
      ],
    }),
    errorText: (status, message) =>
      `${status} ${JSON.stringify({ type: 'error', error: { type: { 401: 'authentication_error', 429: 'rate_limit_error' }[status], message } })}`,
    halfToolCall: () => ({ type: 'toolCall', id: 'call_1', name: 'get_weather', arguments: { city: 'Par' } }),
    droppedUsage: { input: 10, output: 1 },
  },
  {
    protocol: 'openai-responses',
    model: 'openai/gpt-5',
    extra: (stop) => ({
      responseId: 'resp_mock_1',
      rawStopReason: stop === 'length' ? 'incomplete.max_output_tokens' : 'completed',
    }),
    text: (text, index) => ({ type: 'text', text, textSignature: JSON.stringify({ v: 1, id: `msg_mock_${index}` }) }),
    toolCallId: (index) => `call_1|fc_mock_${index}`,
    toolResultInBody: (body) => body.input.find((item: { type?: string }) => item.type === 'function_call_output'),
    toolResultWire: (text) => ({ type: 'function_call_output', call_id: 'call_1', output: text }),
    errorText: (status, message) =>
      `OpenAI API error (${status}): ${JSON.stringify({
        message,
        type: status === 429 ? 'rate_limit_exceeded' : 'invalid_request_error',
        param: null,
        code: status === 401 ? 'invalid_api_key' : null,
      })}`,
    halfToolCall: (index) => ({
      type: 'toolCall',
      id: `call_1|fc_mock_${index}`,
      name: 'get_weather',
      arguments: { city: 'Par' },
    }),
    droppedUsage: { input: 0, output: 0 },
  },
  {
    protocol: 'openai-chat',
    model: 'local/qwen3-8b',
    extra: (stop) => ({
      responseId: 'chatcmpl-mock-1',
      rawStopReason: { stop: 'stop', toolUse: 'tool_calls', length: 'length' }[stop],
    }),
    text: (text) => ({ type: 'text', text }),
    toolCallId: () => 'call_1',
    toolResultInBody: (body) => body.messages.find((m: { role: string }) => m.role === 'tool'),
    toolResultWire: (text) => ({ role: 'tool', content: text, tool_call_id: 'call_1' }),
    errorText: (status, message) =>
      `${status}: ${JSON.stringify({
        message,
        type: status === 429 ? 'rate_limit_exceeded' : 'invalid_request_error',
        param: null,
        code: status === 401 ? 'invalid_api_key' : null,
      })}`,
    halfToolCall: () => ({
      type: 'toolCall',
      id: 'call_1',
      name: 'get_weather',
      arguments: {},
      argumentsError:
        'Unterminated string in JSON at position 13 (line 1 column 14)\n\nReceived arguments:\n{"city": "Par',
    }),
    droppedUsage: { input: 0, output: 0 },
  },
];

interface Setup {
  keel: Keel;
  mock: MockProviderServer;
  /** Arrival time (ms since epoch) of each request at the mock. */
  arrivals: number[];
}

let running: { keel: Keel; mocks: MockProviderServer[] } | undefined;

/** Fresh mock servers (one per protocol) and a worker whose `*` provider is pi-ai pointed at them; returns `protocol`'s. */
async function setup(protocol: MockProtocolName, hooks?: AgentHooks): Promise<Setup> {
  const mocks = Object.fromEntries(
    await Promise.all(PROTOCOLS.map(async (p) => [p, await startMockProvider(p)] as const)),
  ) as Record<MockProtocolName, MockProviderServer>;
  const keel = await startKeel({
    tools: [weather],
    hooks,
    models: {
      '*': piAiProvider({
        baseUrls: {
          anthropic: mocks.anthropic.url,
          openai: `${mocks['openai-responses'].url}/v1`,
          local: `${mocks['openai-chat'].url}/v1`,
        },
        apiKeys: { anthropic: KEY, openai: KEY, local: KEY },
        env: {},
      }),
    },
  });
  running = { keel, mocks: Object.values(mocks) };
  const mock = mocks[protocol];
  const arrivals: number[] = [];
  const push = mock.requests.push.bind(mock.requests);
  mock.requests.push = (...items) => {
    for (const _ of items) arrivals.push(Date.now());
    return push(...items);
  };
  return { keel, mock, arrivals };
}

afterEach(async () => {
  if (!running) return;
  const { keel, mocks } = running;
  running = undefined;
  await keel.stop();
  await Promise.all(mocks.map((m) => m.close()));
});

/** `strip()` plus pi-ai's per-call `durationMs`. */
async function transcript(h: AgentRunHandle): Promise<unknown[]> {
  return strip(await h.allMessages()).map((m) => {
    const { durationMs: _d, ...rest } = m as Record<string, unknown>;
    return rest;
  });
}

function textOf(m: Message | undefined): string {
  if (!m || m.role !== 'assistant') return '';
  return m.content.map((b) => (b.type === 'text' ? b.text : '')).join('');
}

/** The text a model heartbeat shows (its tail: these replies are shorter than the tail bound). */
function streamedOf(h: ModelHeartbeat | undefined): string {
  const st = h && streamedText(h);
  expect(st ? st.textLength : 0).toBe(st?.tail.length ?? 0);
  return st?.tail ?? '';
}

/** `callModel` attempts as recorded by `ActivityTaskStarted` (Temporal writes it once per activity, with the last attempt). */
async function modelAttempts(h: AgentRunHandle): Promise<number[]> {
  const events = (await h.workflow.fetchHistory()).events ?? [];
  const types = new Map<string, string>();
  for (const e of events) {
    const a = e.activityTaskScheduledEventAttributes;
    if (a) types.set(String(e.eventId), a.activityType?.name ?? '');
  }
  return events.flatMap((e) => {
    const a = e.activityTaskStartedEventAttributes;
    return a && types.get(String(a.scheduledEventId)) === 'callModel' ? [a.attempt ?? 0] : [];
  });
}

/** The pending `callModel` activity's heartbeat details, decoded. */
async function modelHeartbeat(h: AgentRunHandle): Promise<ModelHeartbeat | undefined> {
  const pending = (await h.workflow.describe()).raw.pendingActivities ?? [];
  const activity = pending.find((a) => a.activityType?.name === 'callModel');
  const payload = activity?.heartbeatDetails?.payloads?.[0];
  return payload ? defaultPayloadConverter.fromPayload(payload) : undefined;
}

async function expectNoKey(h: AgentRunHandle, result: unknown): Promise<void> {
  // every payload decoded: the run's own texts are there (control), the key is not
  const history = historyText(await h.workflow.fetchHistory());
  const prompt = (await h.messages({ from: 0, limit: 1 })).messages[0];
  expect(history).toContain(JSON.stringify(prompt.content).slice(1, 40));
  expect(history).not.toContain(KEY);
  expect(JSON.stringify(result)).not.toContain(KEY);
}

const toolCallReply = (before = 'Let me check.'): MockReply => ({
  blocks: [
    { type: 'text', text: before },
    { type: 'toolCall', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } },
  ],
});

describe.each(CASES)('pi-ai over $protocol ($model) through agentWorkflow', (c) => {
  it('tool-call round trip: the model asks for a tool, gets its result, answers; no API key in history or result', async () => {
    const { keel, mock } = await setup(c.protocol);
    mock.enqueue(
      { reply: toolCallReply() },
      { reply: { blocks: [{ type: 'text', text: 'It is sunny in Paris.' }], usage: { input: 30, output: 7 } } },
    );
    const before = executions;

    const h = await keel.start({
      model: c.model,
      systemPrompt: 'You are terse.',
      prompt: 'Weather in Paris?',
      tools: ['get_weather'],
    });
    const r = await h.result();

    const id = c.toolCallId(1);
    expect(await transcript(h)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      {
        role: 'assistant',
        content: [
          c.text('Let me check.', 0),
          { type: 'toolCall', id, name: 'get_weather', arguments: { city: 'Paris' } },
        ],
        stopReason: 'toolUse',
        ...c.extra('toolUse'),
      },
      {
        role: 'toolResult',
        toolCallId: id,
        toolName: 'get_weather',
        content: [{ type: 'text', text: 'Sunny in Paris, 21 °C' }],
        isError: false,
      },
      { role: 'assistant', content: [c.text('It is sunny in Paris.', 0)], stopReason: 'stop', ...c.extra('stop') },
    ]);
    expect(executions).toBe(before + 1);
    expect(r.status).toBe('completed');
    expect(r.finalText).toBe('It is sunny in Paris.');
    expect(r.turns).toBe(2);
    expect([r.usage.input, r.usage.output, r.usage.totalTokens]).toEqual([40, 12, 52]);
    // the wire: two requests, the key in its header, the tool result sent back on the second
    expect(mock.requests).toHaveLength(2);
    expect(JSON.stringify(mock.requests[0].headers)).toContain(KEY);
    expect(c.toolResultInBody(mock.requests[1].body)).toEqual(c.toolResultWire('Sunny in Paris, 21 °C'));
    expect(mock.pending()).toBe(0);
    await expectNoKey(h, r);
  });

  it('429 with retry-after: 1, twice, then success: 3 attempts ≥ 1 s apart, one assistant message', async () => {
    const { keel, mock, arrivals } = await setup(c.protocol);
    mock.enqueue(
      { status: 429, headers: { 'retry-after': '1' }, message: 'Rate limit reached, slow down' },
      { status: 429, headers: { 'retry-after': '1' }, message: 'Rate limit reached, slow down' },
      { reply: { blocks: [{ type: 'text', text: 'Finally.' }] } },
    );

    // The policy alone would retry after 100 ms: only honouring retry-after makes the 1 s gaps.
    const h = await keel.start({
      model: c.model,
      prompt: 'hi',
      modelRetry: { initialInterval: 100, backoffCoefficient: 1, maximumInterval: 100 },
    });
    const r = await h.result();

    expect(r.status).toBe('completed');
    expect(await transcript(h)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [c.text('Finally.', 0)], stopReason: 'stop', ...c.extra('stop') },
    ]);
    expect(mock.requests).toHaveLength(3);
    expect(await modelAttempts(h)).toEqual([3]);
    const gaps = arrivals.slice(1).map((t, i) => t - arrivals[i]);
    for (const gap of gaps) {
      expect(gap).toBeGreaterThanOrEqual(950);
      expect(gap).toBeLessThan(4000);
    }
  });

  it('401: no retry, the run ends Failed (AgentRunFailed) with the provider message, key redacted', async () => {
    const { keel, mock } = await setup(c.protocol);
    mock.enqueue({ status: 401, message: `Invalid API key: ${KEY}` });

    const h = await keel.start({ model: c.model, prompt: 'hi', modelRetry: { initialInterval: 100 } });
    const r = await h.result();

    const error = c.errorText(401, 'Invalid API key: [REDACTED]');
    expect(r.status).toBe('failed');
    expect(r.error).toBe(error);
    expect(mock.requests).toHaveLength(1);
    expect(await modelAttempts(h)).toEqual([1]);
    expect((await h.workflow.describe()).status.name).toBe('FAILED');
    const failure = await h.workflow.result().catch((e) => e);
    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect(failure.cause.type).toBe('AgentRunFailed');
    const events = (await h.workflow.fetchHistory()).events ?? [];
    expect(events.at(-1)?.workflowExecutionFailedEventAttributes?.failure?.applicationFailureInfo?.type).toBe(
      'AgentRunFailed',
    );
    expect(await transcript(h)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [{ type: 'text', text: '' }], stopReason: 'error', errorMessage: error },
    ]);
    await expectNoKey(h, r);
  });

  it('connection dropped mid-stream: retried, exactly one assistant message for the turn, the dropped usage counted', async () => {
    const { keel, mock } = await setup(c.protocol);
    mock.enqueue(
      { reply: { blocks: [{ type: 'text', text: 'This reply is cut off in the middle' }] }, dropAfterFrames: 4 },
      { reply: { blocks: [{ type: 'text', text: 'Whole reply.' }], usage: { input: 12, output: 3 } } },
    );

    const h = await keel.start({ model: c.model, prompt: 'hi', modelRetry: { initialInterval: 100 } });
    const r = await h.result();

    expect(r.status).toBe('completed');
    expect(mock.requests).toHaveLength(2);
    expect(mock.requests[0].droppedByServer).toBe(true);
    expect(await modelAttempts(h)).toEqual([2]);
    expect(await transcript(h)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [c.text('Whole reply.', 0)], stopReason: 'stop', ...c.extra('stop') },
    ]);
    expect([r.usage.input, r.usage.output]).toEqual([12 + c.droppedUsage.input, 3 + c.droppedUsage.output]);
  });

  it('stop at max_tokens inside a half-written tool call: nothing executed, the length-truncation result, the model called again', async () => {
    const { keel, mock } = await setup(c.protocol);
    mock.enqueue(
      {
        reply: {
          blocks: [
            { type: 'text', text: 'Checking.' },
            { type: 'toolCall', id: 'call_1', name: 'get_weather', arguments: '{"city": "Par' },
          ],
          stop: 'length',
        },
      },
      { reply: { blocks: [{ type: 'text', text: 'Let me try again later.' }] } },
    );
    const before = executions;

    const h = await keel.start({ model: c.model, prompt: 'Weather in Paris?', tools: ['get_weather'] });
    const r = await h.result();

    const call = c.halfToolCall(1);
    expect(executions).toBe(before);
    expect(r.status).toBe('completed');
    expect(await transcript(h)).toEqual([
      { role: 'user', content: [{ type: 'text', text: 'Weather in Paris?' }] },
      { role: 'assistant', content: [c.text('Checking.', 0), call], stopReason: 'length', ...c.extra('length') },
      {
        role: 'toolResult',
        toolCallId: call.id,
        toolName: 'get_weather',
        content: [{ type: 'text', text: lengthTruncated('get_weather') }],
        details: {},
        isError: true,
      },
      { role: 'assistant', content: [c.text('Let me try again later.', 0)], stopReason: 'stop', ...c.extra('stop') },
    ]);
    expect(mock.requests).toHaveLength(2);
    expect(JSON.stringify(mock.requests[1].body)).toContain(
      JSON.stringify(lengthTruncated('get_weather')).slice(1, -1),
    );
  });

  it('cancel while the server streams slowly: the socket closes, the message is aborted with the partial text', async () => {
    const { keel, mock } = await setup(c.protocol);
    const full = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' '); // 40 text deltas, 200 ms apart
    mock.enqueue({ reply: { blocks: [{ type: 'text', text: full }], chunkSize: 4 }, delayMs: 200 });

    const h = await keel.start({ model: c.model, prompt: 'count' });
    await until(async () => streamedOf(await modelHeartbeat(h)).length >= 8, 20_000, 'partial text heartbeated');
    await h.cancel('enough');
    const closedEarly = await Promise.race([
      mock.requests[0].closed.then(() => mock.requests[0].clientClosedEarly),
      sleep(5000).then(() => 'timeout'),
    ]);

    expect(closedEarly).toBe(true);
    expect(mock.requests[0].framesSent).toBeLessThan(30); // the rest of the stream was never sent
    await h.workflow.result().catch(() => undefined);
    expect((await h.workflow.describe()).status.name).toBe('CANCELLED');
    const messages = await h.allMessages();
    expect(messages).toHaveLength(2);
    const a = messages[1] as AssistantMessage;
    expect(a.stopReason).toBe('aborted');
    expect(a.errorMessage).toBe('Request was aborted');
    const text = textOf(a);
    expect(text.length).toBeGreaterThanOrEqual(8);
    expect(full.startsWith(text)).toBe(true);
    expect(text.length).toBeLessThan(full.length);
    expect(mock.requests).toHaveLength(1); // no model call after the abort
    expect(await workflowTaskFailures(h)).toEqual([]);
  });
});

describe('pi-ai through agentWorkflow: live progress, thinking, usage of failed attempts', () => {
  it('a client reading the callModel heartbeat details sees the partial text grow', async () => {
    const { keel, mock } = await setup('anthropic');
    const full = Array.from({ length: 30 }, (_, i) => `word${i}`).join(' ');
    mock.enqueue({ reply: { blocks: [{ type: 'text', text: full }], chunkSize: 4 }, delayMs: 100 });

    const h = await keel.start({ model: 'anthropic/claude-sonnet-4-5', prompt: 'talk', heartbeatTimeout: '2s' });
    let first = '';
    await until(async () => (first = streamedOf(await modelHeartbeat(h))).length > 0, 20_000, 'first partial');
    let second = '';
    await until(
      async () => (second = streamedOf(await modelHeartbeat(h))).length > first.length,
      20_000,
      'longer partial',
    );

    expect(full.startsWith(first)).toBe(true);
    expect(full.startsWith(second)).toBe(true);
    expect(second.length).toBeGreaterThan(first.length);
    const hb = await modelHeartbeat(h);
    if (hb) expect(hb.kind).toBe('model');
    const r = await h.result();
    expect(r.finalText).toBe(full);
  });

  it.each(['anthropic', 'openai-responses'] as const)(
    '%s: thinking blocks and signatures are kept in the transcript and sent back',
    async (protocol) => {
      const c = CASES.find((x) => x.protocol === protocol)!;
      const { keel, mock } = await setup(protocol);
      mock.enqueue(
        {
          reply: {
            blocks: [
              { type: 'thinking', thinking: 'The user wants the weather.', signature: 'SIG-abc123' },
              { type: 'toolCall', id: 'call_1', name: 'get_weather', arguments: { city: 'Paris' } },
            ],
          },
        },
        {
          reply: {
            blocks: [
              { type: 'thinking', thinking: 'Now answer.', signature: 'SIG-def456' },
              { type: 'text', text: 'Sunny.' },
            ],
          },
        },
      );

      const h = await keel.start({
        model: c.model,
        prompt: 'Weather in Paris?',
        tools: ['get_weather'],
        modelOptions: { reasoning: 'medium' },
      });
      const r = await h.result();
      expect(r.status).toBe('completed');

      const messages = await h.allMessages();
      const first = messages[1] as AssistantMessage;
      const second = messages[3] as AssistantMessage;
      const reasoningItem = (id: string, text: string, sig: string) => ({
        type: 'reasoning',
        id,
        summary: [{ type: 'summary_text', text }],
        encrypted_content: sig,
      });
      if (protocol === 'anthropic') {
        expect(first.content[0]).toEqual({
          type: 'thinking',
          thinking: 'The user wants the weather.',
          thinkingSignature: 'SIG-abc123',
        });
        expect(second.content[0]).toEqual({
          type: 'thinking',
          thinking: 'Now answer.',
          thinkingSignature: 'SIG-def456',
        });
        expect(mock.requests[0].body.thinking).toMatchObject({ type: 'enabled' });
        expect(mock.requests[1].body.messages[1]).toEqual({
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'The user wants the weather.', signature: 'SIG-abc123' },
            { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { city: 'Paris' } },
          ],
        });
      } else {
        expect(first.content[0]).toEqual({
          type: 'thinking',
          thinking: 'The user wants the weather.',
          thinkingSignature: JSON.stringify(reasoningItem('rs_mock_0', 'The user wants the weather.', 'SIG-abc123')),
        });
        expect(second.content[0]).toEqual({
          type: 'thinking',
          thinking: 'Now answer.',
          thinkingSignature: JSON.stringify(reasoningItem('rs_mock_0', 'Now answer.', 'SIG-def456')),
        });
        const input = mock.requests[1].body.input as { type?: string }[];
        expect(input.filter((item) => item.type === 'reasoning')).toEqual([
          reasoningItem('rs_mock_0', 'The user wants the weather.', 'SIG-abc123'),
        ]);
      }
    },
  );

  it('usage of failed attempts is summed into the run usage (two dropped streams, then success)', async () => {
    const { keel, mock } = await setup('anthropic');
    const dropped = {
      reply: { blocks: [{ type: 'text' as const, text: 'cut off mid-way through' }], usage: { input: 10, output: 5 } },
      dropAfterFrames: 3,
    };
    mock.enqueue(dropped, dropped, {
      reply: { blocks: [{ type: 'text', text: 'Done.' }], usage: { input: 12, output: 3 } },
    });

    const h = await keel.start({
      model: 'anthropic/claude-sonnet-4-5',
      prompt: 'hi',
      modelRetry: { initialInterval: 100, backoffCoefficient: 1 },
    });
    const r = await h.result();

    expect(r.status).toBe('completed');
    expect(mock.requests).toHaveLength(3);
    expect(await modelAttempts(h)).toEqual([3]);
    // each dropped attempt reported 10 input tokens (and 1 output token) in message_start
    expect([r.usage.input, r.usage.output, r.usage.totalTokens]).toEqual([32, 5, 37]);
    expect(r.usage.cost.total).toBeGreaterThan(0);
    expect((await h.state()).usage).toEqual(r.usage);
    const messages = r.newMessages;
    expect(messages.map((m) => m.role)).toEqual(['user', 'assistant']);
    // the message keeps its own usage; the run's usage has the failed attempts on top
    expect((messages[1] as AssistantMessage).usage.input).toBe(12);
  });

  it('usage of failed attempts is kept when the retries run out (the run fails with the sum)', async () => {
    const { keel, mock } = await setup('anthropic');
    const dropped = {
      reply: { blocks: [{ type: 'text' as const, text: 'cut off mid-way through' }] },
      dropAfterFrames: 3,
    };
    mock.enqueue(dropped, dropped);

    const h = await keel.start({
      model: 'anthropic/claude-sonnet-4-5',
      prompt: 'hi',
      modelRetry: { initialInterval: 100, maximumAttempts: 2 },
    });
    const r = await h.result();

    expect(r.status).toBe('failed');
    expect(r.error).toBe('terminated: other side closed (UND_ERR_SOCKET)');
    expect(mock.requests).toHaveLength(2);
    expect([r.usage.input, r.usage.output, r.usage.totalTokens]).toEqual([20, 2, 22]);
    const last = r.newMessages.at(-1) as AssistantMessage;
    expect(last.stopReason).toBe('error');
    expect(last.usage.input).toBe(20);
  });

  it('usage of failed attempts is kept when the last attempt fails before the model call (a throwing transformContext)', async () => {
    let calls = 0;
    const { keel, mock } = await setup('anthropic', {
      transformContext: (messages) => {
        calls += 1;
        if (calls === 2) throw new Error('context store unavailable');
        return messages;
      },
    });
    mock.enqueue({ reply: { blocks: [{ type: 'text', text: 'cut off mid-way through' }] }, dropAfterFrames: 3 });

    const h = await keel.start({
      model: 'anthropic/claude-sonnet-4-5',
      prompt: 'hi',
      modelRetry: { initialInterval: 100, maximumAttempts: 2 },
    });
    const r = await h.result();

    expect(r.status).toBe('failed');
    expect(r.error).toBe('context store unavailable');
    expect(calls).toBe(2);
    expect(mock.requests).toHaveLength(1);
    expect([r.usage.input, r.usage.output]).toEqual([10, 1]);
  });
});

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
