/**
 * Anthropic Messages streaming protocol (`POST /v1/messages`, `stream: true`): `message_start`,
 * `content_block_start` / `content_block_delta` / `content_block_stop` per block (text, thinking + `signature_delta`,
 * tool_use + `input_json_delta`), `message_delta` with the stop reason and usage, `message_stop`.
 */
import { argumentsText, pieces, type MockProtocol, type MockReply, sse, stopOf, usageOf } from './script.js';

const STOP_REASONS = { stop: 'end_turn', toolUse: 'tool_use', length: 'max_tokens' } as const;

const ERROR_TYPES: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

/** The frames one at a time, as the server sends them: a long reply is never built whole. */
function* frames(reply: MockReply, model: string): Generator<string> {
  const size = reply.chunkSize;
  const usage = usageOf(reply);
  const ev = (type: string, data: Record<string, unknown>) => sse({ type, ...data }, type);
  yield ev('message_start', {
    message: {
      id: 'msg_mock_1',
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: {
        input_tokens: usage.input,
        output_tokens: 1,
        cache_read_input_tokens: usage.cacheRead,
        cache_creation_input_tokens: usage.cacheWrite,
      },
    },
  });
  for (const [index, block] of reply.blocks.entries()) {
    if (block.type === 'text') {
      yield ev('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const piece of pieces(block.text, size)) {
        yield ev('content_block_delta', { index, delta: { type: 'text_delta', text: piece } });
      }
    } else if (block.type === 'thinking') {
      yield ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } });
      for (const piece of pieces(block.thinking, size)) {
        yield ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: piece } });
      }
      yield ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: block.signature } });
    } else {
      yield ev('content_block_start', {
        index,
        content_block: { type: 'tool_use', id: block.id, name: block.name, input: {} },
      });
      for (const piece of pieces(argumentsText(block), size)) {
        yield ev('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } });
      }
    }
    // A reply cut off by the token limit leaves its last block open, as the real API does.
    const cutOff = stopOf(reply) === 'length' && index === reply.blocks.length - 1;
    if (!cutOff) yield ev('content_block_stop', { index });
  }
  yield ev('message_delta', {
    delta: { stop_reason: STOP_REASONS[stopOf(reply)], stop_sequence: null },
    usage: { output_tokens: usage.output },
  });
  yield ev('message_stop', {});
}

export const anthropicProtocol: MockProtocol = {
  name: 'anthropic-messages',
  frames,
  errorBody: (status, message) => ({
    type: 'error',
    error: { type: ERROR_TYPES[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error'), message },
  }),
};
