/** A model request's estimated input tokens and its output cap, for its provider limits' reservation. */
import { estimateContext } from '../../common/compaction.js';
import type { Message } from '../../common/messages.js';
import { DEFAULT_RESERVED_OUTPUT_TOKENS } from '../../common/tree/budget.js';

/**
 * `[input, outputCap]`: the context as compaction estimates it (the last reply's reported usage plus about 4
 * characters a token for what came after) plus the tools' schemas at 4 characters a token; the cap is the request's
 * `maxTokens` (else 4,096). The limiter settles the real usage after the call, so an estimate off by a little costs
 * only until then.
 */
export function estimateRequest(
  messages: Message[],
  systemPrompt: string,
  tools: unknown[],
  options: { maxTokens?: number },
): [number, number] {
  const input = estimateContext(messages, systemPrompt) + Math.ceil(JSON.stringify(tools).length / 4);
  return [input, options.maxTokens ?? DEFAULT_RESERVED_OUTPUT_TOKENS];
}
