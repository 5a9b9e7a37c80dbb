/**
 * The scripting language of the mock model servers: what one response of a queue looks like, independent of the
 * wire protocol. Each protocol module (`anthropic.ts`, `openai-chat.ts`, `openai-responses.ts`) turns a `MockReply`
 * into its own SSE frames and a `MockFailure` into its own error body.
 */

export type MockBlock =
  | { type: 'text'; text: string }
  /**
   * A reasoning block. Anthropic: a `thinking` block whose signature arrives as a `signature_delta`.
   * OpenAI Responses: a `reasoning` item whose `encrypted_content` is the signature. Chat Completions: streamed as
   * `reasoning_content` (no signature on that protocol).
   */
  | { type: 'thinking'; thinking: string; signature: string }
  /**
   * A tool call. `arguments` as an object is streamed as its JSON text; as a string it is streamed verbatim, so a
   * test can send half-written JSON (e.g. with stop `length`).
   */
  | { type: 'toolCall'; id: string; name: string; arguments: Record<string, unknown> | string };

export interface MockReply {
  blocks: MockBlock[];
  /** Default: `toolUse` when a tool call is present, else `stop`. `length` = the output token limit was hit. */
  stop?: 'stop' | 'toolUse' | 'length';
  /**
   * Tokens as the provider reports them. `cacheRead` / `cacheWrite`: prompt-cache hits and writes (Anthropic
   * `cache_read_input_tokens` / `cache_creation_input_tokens`; OpenAI `cached_tokens`, counted inside its input tokens
   * as the real API does). Default `{ input: 10, output: 5 }`, no cache (or the simulated cache's, `promptCache`).
   */
  usage?: { input: number; output: number; cacheRead?: number; cacheWrite?: number };
  /** Text, thinking and tool argument deltas are cut into pieces of this many characters (default 4). */
  chunkSize?: number;
}

export interface MockStreamStep {
  reply: MockReply;
  /** Wait this long before each SSE frame (default 0). */
  delayMs?: number;
  /** Destroy the socket after writing this many SSE frames (headers and the first frames are sent). */
  dropAfterFrames?: number;
  /** Extra response headers. */
  headers?: Record<string, string>;
}

export interface MockFailure {
  status: number;
  /** Response headers, e.g. `{ 'retry-after': '1' }`. */
  headers?: Record<string, string>;
  /** The provider's error message, wrapped in the protocol's error body. */
  message?: string;
  /** A raw JSON body instead of the protocol's error body built from `message`. */
  body?: unknown;
}

export type MockStep = MockStreamStep | MockFailure;

export function isFailure(step: MockStep): step is MockFailure {
  return 'status' in step;
}

export function stopOf(reply: MockReply): 'stop' | 'toolUse' | 'length' {
  return reply.stop ?? (reply.blocks.some((b) => b.type === 'toolCall') ? 'toolUse' : 'stop');
}

export function usageOf(reply: MockReply): { input: number; output: number; cacheRead: number; cacheWrite: number } {
  const usage = reply.usage ?? { input: 10, output: 5 };
  return { ...usage, cacheRead: usage.cacheRead ?? 0, cacheWrite: usage.cacheWrite ?? 0 };
}

export function argumentsText(block: Extract<MockBlock, { type: 'toolCall' }>): string {
  return typeof block.arguments === 'string' ? block.arguments : JSON.stringify(block.arguments);
}

/** Cuts `text` into pieces of `size` characters; an empty text gives no pieces. */
export function chunks(text: string, size = 4): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** {@link chunks}, one piece at a time (a long text is never held in pieces all at once). */
export function* pieces(text: string, size = 4): Generator<string> {
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

/** One SSE frame. `event` is omitted for protocols that send only `data:` lines. */
export function sse(data: unknown, event?: string): string {
  const payload = typeof data === 'string' ? data : JSON.stringify(data);
  return `${event ? `event: ${event}\n` : ''}data: ${payload}\n\n`;
}

/** A wire protocol the mock server speaks. */
/** OpenAI's error envelope (Chat Completions and Responses share it). */
export function openaiErrorBody(status: number, message: string): unknown {
  return {
    error: {
      message,
      type: status === 429 ? 'rate_limit_exceeded' : status >= 500 ? 'server_error' : 'invalid_request_error',
      param: null,
      code: status === 401 ? 'invalid_api_key' : null,
    },
  };
}

export interface MockProtocol {
  name: 'anthropic-messages' | 'openai-chat-completions' | 'openai-responses';
  /** The SSE frames of one streamed reply. `model` is the model id the request asked for. */
  frames(reply: MockReply, model: string): Iterable<string>;
  /** The protocol's JSON error body for a failure with this status and message. */
  errorBody(status: number, message: string): unknown;
}
