/**
 * OpenAI Chat Completions streaming protocol (`POST /v1/chat/completions`, `stream: true`): `data:` chunks of
 * `chat.completion.chunk` with `delta.content`, `delta.reasoning_content` (as llama.cpp / vLLM / DeepSeek stream
 * reasoning), `delta.tool_calls[]` (id + name first, then argument pieces), a chunk with `finish_reason`, a usage chunk
 * with empty `choices`, and `data: [DONE]`. This is what pi-ai's `openai-completions` api reads: the api of
 * OpenAI-compatible servers (Ollama, vLLM, LM Studio, llama.cpp) and of most hosted "OpenAI-compatible" providers.
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

const FINISH_REASONS = { stop: 'stop', toolUse: 'tool_calls', length: 'length' } as const;

function frames(reply: MockReply, model: string): string[] {
  const size = reply.chunkSize;
  const out: string[] = [];
  const frame = (fields: Record<string, unknown>) =>
    out.push(sse({ id: 'chatcmpl-mock-1', object: 'chat.completion.chunk', created: 1_700_000_000, model, ...fields }));
  const chunk = (delta: Record<string, unknown>, finishReason: string | null = null) =>
    frame({ choices: [{ index: 0, delta, finish_reason: finishReason }] });
  chunk({ role: 'assistant', content: '' });
  let toolIndex = 0;
  for (const block of reply.blocks) {
    if (block.type === 'text') {
      for (const piece of chunks(block.text, size)) chunk({ content: piece });
    } else if (block.type === 'thinking') {
      for (const piece of chunks(block.thinking, size)) chunk({ reasoning_content: piece });
    } else {
      const index = toolIndex++;
      chunk({ tool_calls: [{ index, id: block.id, type: 'function', function: { name: block.name, arguments: '' } }] });
      for (const piece of chunks(argumentsText(block), size)) {
        chunk({ tool_calls: [{ index, function: { arguments: piece } }] });
      }
    }
  }
  chunk({}, FINISH_REASONS[stopOf(reply)]);
  const usage = usageOf(reply);
  frame({
    choices: [],
    // as OpenAI reports them: cached tokens are part of prompt_tokens
    usage: {
      prompt_tokens: usage.input + usage.cacheRead,
      prompt_tokens_details: { cached_tokens: usage.cacheRead },
      completion_tokens: usage.output,
      total_tokens: usage.input + usage.cacheRead + usage.output,
    },
  });
  out.push(sse('[DONE]'));
  return out;
}

export const openaiChatProtocol: MockProtocol = {
  name: 'openai-chat-completions',
  frames,
  errorBody: openaiErrorBody,
};
