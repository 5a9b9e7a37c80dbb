/**
 * OpenAI Responses streaming protocol (`POST /v1/responses`, `stream: true`) — what pi-ai's `openai-responses` api
 * (the api of every `openai/*` model) reads: `response.created`, per output item `response.output_item.added`, its
 * deltas (`response.reasoning_summary_text.delta`, `response.output_text.delta`,
 * `response.function_call_arguments.delta`) and `response.output_item.done` (reasoning items carry
 * `encrypted_content`, the signature sent back on the next request), then `response.completed` — or
 * `response.incomplete` with `incomplete_details.reason: "max_output_tokens"` for a reply cut off by the token limit.
 */
import {
  argumentsText,
  chunks,
  openaiErrorBody,
  type MockProtocol,
  type MockReply,
  sse,
  stopOf,
  usageOf,
} from './script.js';

function frames(reply: MockReply, model: string): string[] {
  const size = reply.chunkSize;
  const out: string[] = [];
  let sequence = 0;
  const ev = (type: string, data: Record<string, unknown>) =>
    out.push(sse({ type, sequence_number: sequence++, ...data }, type));
  const cutOff = stopOf(reply) === 'length';
  const response = (status: string, output: unknown[]) => ({
    id: 'resp_mock_1',
    object: 'response',
    created_at: 1_700_000_000,
    model,
    status,
    output,
  });
  ev('response.created', { response: response('in_progress', []) });
  const done: unknown[] = [];
  reply.blocks.forEach((block, outputIndex) => {
    const last = outputIndex === reply.blocks.length - 1;
    if (block.type === 'text') {
      const id = `msg_mock_${outputIndex}`;
      ev('response.output_item.added', {
        output_index: outputIndex,
        item: { type: 'message', id, role: 'assistant', status: 'in_progress', content: [] },
      });
      ev('response.content_part.added', {
        output_index: outputIndex,
        item_id: id,
        content_index: 0,
        part: { type: 'output_text', text: '', annotations: [] },
      });
      for (const piece of chunks(block.text, size)) {
        ev('response.output_text.delta', { output_index: outputIndex, item_id: id, content_index: 0, delta: piece });
      }
      if (cutOff && last) return;
      ev('response.output_text.done', { output_index: outputIndex, item_id: id, content_index: 0, text: block.text });
      const item = {
        type: 'message',
        id,
        role: 'assistant',
        status: 'completed',
        content: [{ type: 'output_text', text: block.text, annotations: [] }],
      };
      ev('response.output_item.done', { output_index: outputIndex, item });
      done.push(item);
    } else if (block.type === 'thinking') {
      const id = `rs_mock_${outputIndex}`;
      ev('response.output_item.added', { output_index: outputIndex, item: { type: 'reasoning', id, summary: [] } });
      for (const piece of chunks(block.thinking, size)) {
        ev('response.reasoning_summary_text.delta', {
          output_index: outputIndex,
          item_id: id,
          summary_index: 0,
          delta: piece,
        });
      }
      if (cutOff && last) return;
      const item = {
        type: 'reasoning',
        id,
        summary: [{ type: 'summary_text', text: block.thinking }],
        encrypted_content: block.signature,
      };
      ev('response.output_item.done', { output_index: outputIndex, item });
      done.push(item);
    } else {
      const id = `fc_mock_${outputIndex}`;
      const base = { type: 'function_call', id, call_id: block.id, name: block.name };
      ev('response.output_item.added', {
        output_index: outputIndex,
        item: { ...base, arguments: '', status: 'in_progress' },
      });
      const args = argumentsText(block);
      for (const piece of chunks(args, size)) {
        ev('response.function_call_arguments.delta', { output_index: outputIndex, item_id: id, delta: piece });
      }
      if (cutOff && last) return;
      ev('response.function_call_arguments.done', { output_index: outputIndex, item_id: id, arguments: args });
      const item = { ...base, arguments: args, status: 'completed' };
      ev('response.output_item.done', { output_index: outputIndex, item });
      done.push(item);
    }
  });
  const usageBody = usageBodyOf(reply);

  if (cutOff) {
    ev('response.incomplete', {
      response: {
        ...response('incomplete', done),
        incomplete_details: { reason: 'max_output_tokens' },
        usage: usageBody,
      },
    });
  } else {
    ev('response.completed', { response: { ...response('completed', done), usage: usageBody } });
  }
  return out;
}

/** The response's usage as OpenAI reports it: cached tokens are part of `input_tokens`. */
function usageBodyOf(reply: MockReply) {
  const usage = usageOf(reply);
  return {
    input_tokens: usage.input + usage.cacheRead,
    input_tokens_details: { cached_tokens: usage.cacheRead },
    output_tokens: usage.output,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: usage.input + usage.cacheRead + usage.output,
  };
}

export const openaiResponsesProtocol: MockProtocol = {
  name: 'openai-responses',
  frames,
  errorBody: openaiErrorBody,
};
